#include "memscope/recording/recorded_command.h"

#include <rapidjson/document.h>

namespace memscope {

namespace {

constexpr size_t kCommandLimit = 4096;  // the CUPTI tracer cuts "command" here

std::string joined(const std::vector<std::string>& argv) {
    std::string line;
    for (const std::string& a : argv) line += (line.empty() ? "" : " ") + a;
    return line;
}

// "argv": a JSON list of strings, exactly as the process got them.
Result<std::vector<std::string>> parseArgvJson(const std::string& json) {
    rapidjson::Document d;
    d.Parse(json.data(), json.size());
    if (d.HasParseError() || !d.IsArray())
        return makeError("the recorded \"argv\" is not a JSON list of strings");
    std::vector<std::string> out;
    for (const auto& v : d.GetArray()) {
        if (!v.IsString()) return makeError("the recorded \"argv\" holds something not a string");
        out.emplace_back(v.GetString(), v.GetStringLength());
    }
    return out;
}

// The inverse of joining at single spaces: empty arguments come back as
// they went (two spaces in a row), an argument that held a space as two.
std::vector<std::string> splitAtSpaces(const std::string& line) {
    std::vector<std::string> out(1);
    for (char c : line) {
        if (c == ' ')
            out.emplace_back();
        else
            out.back() += c;
    }
    return out;
}

}  // namespace

Result<RecordedCommand> recordedCommand(const TraceMetadata& metadata) {
    const std::string* command = metadata.property("command");
    const std::string* argv_json = metadata.property("argv");
    if (!command && !argv_json)
        return makeError(
            "the run does not say which command it ran (record it with `memscope-cli record -- "
            "COMMAND...` to be able to run it again)");
    RecordedCommand out;
    if (const std::string* cwd = metadata.property("cwd"); cwd && !cwd->empty())
        out.working_dir = *cwd;
    if (argv_json) {
        auto argv = parseArgvJson(*argv_json);
        if (!argv.ok()) return argv.error();
        // The tracer cuts "argv" at whole arguments past 16 KiB and "command"
        // at 4 KiB: when both are whole they agree, else argv was cut.
        if (command && command->size() < kCommandLimit && joined(*argv) != *command)
            return makeError(
                "the recorded \"argv\" and \"command\" disagree (argv was cut short?): run the "
                "command again by hand");
        if (!argv->empty() && !argv->front().empty()) {
            out.argv = std::move(*argv);
            out.exact = true;
            return out;
        }
    }
    if (!command || command->empty() || command->front() == ' ')
        return makeError("the run's recorded command is empty");
    if (command->size() >= kCommandLimit)
        return makeError("the run's recorded command was cut at " + std::to_string(kCommandLimit) +
                         " characters: run the command again by hand");
    out.argv = splitAtSpaces(*command);
    return out;
}

std::vector<std::string> recordApplyArguments(std::string_view policy, std::string_view run_file,
                                              std::string_view out_dir,
                                              const std::vector<std::string>& command) {
    std::vector<std::string> args{"record",
                                  "--apply",
                                  std::string(policy),
                                  "--from",
                                  std::string(run_file),
                                  "-o",
                                  std::string(out_dir),
                                  "--"};
    args.insert(args.end(), command.begin(), command.end());
    return args;
}

std::string appliedRunFolderName(std::string_view policy, std::string_view stamp) {
    std::string stem;
    for (char c : policy.substr(0, 80)) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
        stem += plain ? c : '_';
    }
    if (stem.empty() || stem.front() == '.') stem.insert(stem.begin(), 'p');
    std::string name = "applied-" + stem;
    if (!stamp.empty()) name += "-" + std::string(stamp);
    return name;
}

}  // namespace memscope
