"""The part of the run whose allocator history is recorded (`record --steps
A:B`, `--capture-range nvtx:NAME`): switches the history on and off and logs
when, so that the merge can crop the other sources (CPU capture, CUPTI) to the
same range and start it with the state alive then.

Steps: on when step A opens, off when step B has surely ended. A step that an
optimizer closed may still be joined by a second optimizer (a GAN's G after D:
phases.Recorder); once the recorder has seen a join, or for step 0 (before any
join could be seen), the history stays on until the next step closes too. The
merge crops to the exact steps, so this costs at most one extra step of
history.

NVTX: on at the first push of a range named NAME (torch.cuda.nvtx), off at its
pop, as Nsight Systems' --capture-range=nvtx does (capture-range-end=stop).
"""
import time


class CaptureRange:
    def __init__(self, cfg, history, log_record, recorder):
        self._steps = cfg.steps
        self._nvtx = cfg.nvtx_range
        self._history = history
        self._log = log_record        # log_record(dict): appended to the hook log
        self._rec = recorder
        self._on = False
        self._done = False
        self._nvtx_stack = []         # names pushed, innermost last
        self._nvtx_depth = None       # the stack depth of the capturing range
        self._nvtx_start = 0

    def _switch_on(self, **what):
        if self._on or self._done:
            return
        self._on = True
        self._history.switch_on()
        self._log(dict(t="capture", on=True, time_ns=time.time_ns(), **what))

    def _switch_off(self, **what):
        if not self._on:
            return
        self._on = False
        self._done = True
        self._history.switch_off()
        self._log(dict(t="capture", on=False, time_ns=time.time_ns(), **what))

    # ------------------------------------------------------------- steps
    def step_opened(self, step):
        if self._steps is not None and self._steps[0] <= step <= self._steps[1]:
            self._switch_on(step=step)

    def step_closed(self, step):
        if self._steps is None or not self._on:
            return
        last = self._steps[1]
        sure = last >= 1 and not self._rec.joined
        if step > last or (step == last and sure):
            self._switch_off(step=step)

    # -------------------------------------------------------------- NVTX
    def nvtx_push(self, name):
        self._nvtx_stack.append(name)
        if self._nvtx is not None and name == self._nvtx and self._nvtx_depth is None \
                and not self._done:
            self._nvtx_depth = len(self._nvtx_stack)
            self._nvtx_start = time.time_ns()
            self._switch_on(nvtx=name)

    def nvtx_pop(self):
        if not self._nvtx_stack:
            return
        depth = len(self._nvtx_stack)
        self._nvtx_stack.pop()
        if self._nvtx_depth is not None and depth == self._nvtx_depth:
            self._nvtx_depth = None
            self._log(dict(t="nvtx_range", name=self._nvtx, start_ns=self._nvtx_start,
                           end_ns=time.time_ns()))
            self._switch_off(nvtx=self._nvtx)
