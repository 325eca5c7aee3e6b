// Crash isolation. A scanned tree is untrusted input: a file that makes the analysis crash
// (a defect of leaklint, which the sanitizers and the fuzzer hunt for) must not cost the
// findings of every other file. The run's analysis happens in a child process; a fatal
// signal while a file is being analysed names that file to the parent through a pipe, and the
// parent runs the analysis again without it, reporting it as a per-file diagnostic.
#pragma once

#include <optional>
#include <set>
#include <string>

namespace ll {

// In the parent: forks the child that runs the rest of the program and returns nullopt in it
// (with crashed_files() holding the files earlier children crashed on). In the parent, waits
// for each child and returns its exit status once a child ends without naming a file.
// Without fork (or with LEAKLINT_NO_CRASH_GUARD=1) returns nullopt at once.
std::optional<int> run_guarded();

// Files a previous attempt crashed on: not analysed again, reported as diagnostics.
const std::set<std::string>& crashed_files();

// The file this thread is analysing (nullptr: none), named to the parent if it crashes.
void analysing(const std::string* path);

// An alternate signal stack for this thread, so that a stack overflow is reported too.
void prepare_thread_for_crash_report();

// Testing only: LEAKLINT_TEST_CRASH_ON=<text> makes the analysis of a file whose path
// contains <text> crash (SIGSEGV), as a defect would.
void maybe_injected_crash(const std::string& path);

}  // namespace ll
