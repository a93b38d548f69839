import Foundation

/// The sanitizer settings of the test process (`ASAN_OPTIONS`, `LSAN_OPTIONS`, `TSAN_OPTIONS`), for a child
/// process a test starts with an environment of its own: under `.ci/run`'s AddressSanitizer build the child is
/// instrumented too, and without them its reports would not go to the run's report folder, nor would the known
/// toolchain leaks of `tools/sanitizers/lsan.supp` be suppressed (a leak report makes the child exit non-zero).
public enum SanitizerEnvironment {
    /// The variables that are set, to merge into a child's environment.
    public static var passedOn: [String: String] {
        ProcessInfo.processInfo.environment.filter { ["ASAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"].contains($0.key) }
    }
}
