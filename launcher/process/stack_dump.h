// StackDump: one Python process's stacks as `faulthandler` writes them on a
// signal (every thread, most recent call first), parsed. A warm-started
// worker registers faulthandler on MUSTER_STACK_SIGNAL
// (launcher/process/warm/step_hooks.py); its handler runs in C, so it
// answers even while the script's main thread is blocked in C++ (a
// collective, a driver call, a sleep).
//
// The text, per thread:
//   Thread 0x00007f5e2f7fe640 (most recent call first):
//     File "/usr/lib/python3.11/threading.py", line 324 in wait
//   <blank line>
//   Current thread 0x00007f5e3a0b4740 (most recent call first):
//     File "/job/train.py", line 40 in main
// CPython lists threads newest first, so the main thread is the last one.
// Lines of any other form ("  <no Python frame>", "  ...") are skipped.
//
// Pure; not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace muster {

struct StackFrame {
  std::string file;
  int line = 0;
  std::string function;

  bool operator==(const StackFrame&) const = default;
};

struct ThreadStack {
  std::string id;                  // "0x00007f5e3a0b4740"
  std::vector<StackFrame> frames;  // most recent call first
};

struct StackDump {
  std::vector<ThreadStack> threads;  // in the dump's order: the main thread last

  // The main thread's frames; empty when the dump has no thread.
  const std::vector<StackFrame>& MainFrames() const;
  bool empty() const { return threads.empty(); }
};

StackDump ParseStackDump(std::string_view text);

// The innermost frame of the script's own code: the first frame (most
// recent first) outside the interpreter's library and installed packages
// (paths with /lib/python3 or site-packages or dist-packages); the
// innermost frame when every frame is library code; nullptr when `frames`
// is empty.
const StackFrame* InnermostScriptFrame(const std::vector<StackFrame>& frames);

// `File "F", line N in FUNC`, as faulthandler writes it.
std::string DescribeFrame(const StackFrame& frame);

}  // namespace muster
