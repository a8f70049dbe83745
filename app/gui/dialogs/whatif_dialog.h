#pragma once
// What if…: predicts other checkpointing policies from one measured
// full-save run (core's whatif.h). Lists the layers core found (recorded or
// inferred), or why there are none; the policies to predict (core's default
// sweep for the chain, checked, and any typed in); runs the prediction on a
// worker thread with progress and Cancel; then lists each policy's
// predicted figures, and the refused ones with their reason, and hands the
// predicted runs on to be compared. Below, the advisor (AdvicePanel): a
// budget in, the policy to use out, as code, and recorded on the user's job.

#include <QDialog>
#include <QStringList>
#include <optional>
#include <vector>

#include "loading/advice_runner.h"
#include "loading/run.h"
#include "loading/whatif_runner.h"
#include "memscope/whatif/layer_chain.h"
#include "memscope/whatif/whatif.h"

class QLabel;
class QLineEdit;
class QListWidget;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace memscope::gui {

class AdvicePanel;

class WhatIfDialog : public QDialog {
    Q_OBJECT
public:
    explicit WhatIfDialog(RunPtr run, QWidget* parent = nullptr);
    ~WhatIfDialog() override;

    const RunPtr& run() const { return run_; }
    // The layers core found ("h.0", …), empty with chainProblem() saying why.
    QStringList layerNames() const;
    QString chainProblem() const { return chainProblem_; }
    // The policies offered (core's defaults for the chain) and whether each is checked.
    QStringList offeredPolicies() const;
    void setPolicyChecked(int index, bool checked);
    // Extra policies as typed ("layers:0,2 segments:3+opt-in-bwd"); the
    // error core's parser gives, "" when they parse.
    void setExtraPolicies(const QString& text);
    QString policyError() const;
    // The checked policies, then the typed ones; an error when those do not parse.
    Result<std::vector<WhatIfPolicy>> policies() const;

    void start();
    bool isRunning() const { return runner_->isBusy(); }
    // Blocks until a running prediction has finished and its result is shown.
    void waitForFinished();
    // After a run: the policies refused, "POLICY: reason" each; the result rows shown.
    QStringList refusals() const { return refusals_; }
    int resultRows() const;
    // Selects a result row: its policy's code is shown below (AdvicePanel).
    void selectResultRow(int row);
    AdvicePanel* advicePanel() const { return advice_; }

signals:
    void predictionsReady(memscope::gui::WhatIfOutcome outcome);
    // "Record with this policy" recorded the applied run (AdvicePanel's signal).
    void measuredBesidePrediction(memscope::gui::RunPtr source, memscope::gui::RunPtr predicted,
                                  const QStringList& traces);

private:
    void updateState();
    void onFinished(WhatIfOutcome outcome);
    void onFailed(const QString& message, bool cancelled);
    void showReport(const WhatIfReport& report);
    void onResultSelected();

    RunPtr run_;
    std::optional<LayerChain> chain_;
    QString chainProblem_;
    QString policyError_;  // core's parser on the typed policies
    std::vector<WhatIfPolicy> offered_;
    QStringList refusals_;
    std::shared_ptr<const WhatIfReport> report_;  // the last prediction shown
    std::vector<RunPtr> predicted_;               // its predicted runs
    AdvicePanel* advice_ = nullptr;
    WhatIfRunner* runner_ = nullptr;
    QListWidget* layers_ = nullptr;
    QListWidget* policyList_ = nullptr;
    QLineEdit* extra_ = nullptr;
    QLabel* extraError_ = nullptr;
    QLabel* status_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QTableWidget* results_ = nullptr;
    QPushButton* predict_ = nullptr;
    QPushButton* cancel_ = nullptr;
    bool waiting_ = false;  // a run started and its result not yet shown
};

}  // namespace memscope::gui
