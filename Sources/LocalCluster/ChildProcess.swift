import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`, with every file descriptor above 2 closed in the child.
///
/// Why not Foundation `Process`: on Linux it detects a child's exit through a socket that the child inherits.
/// `pg_ctl start` leaves the server running as a daemon, the daemon keeps that socket open, and `Process`
/// then never reports that `pg_ctl` ended. Closing every inherited descriptor avoids that, and keeps this
/// process's other descriptors out of the server too.
///
/// Ownership: the caller must `wait(timeout:)` for the child (which reaps it) exactly once.
struct ChildProcess {
    /// The child's process id.
    let processID: pid_t

    /// Starts `executable` with `arguments`.
    /// - Parameters:
    ///   - executable: an absolute path (no `PATH` search).
    ///   - arguments: the arguments after `argv[0]`.
    ///   - environment: the complete environment.
    ///   - workingDirectory: the child's directory, where the C library supports setting it.
    ///   - output: the descriptor that becomes the child's standard output.
    ///   - error: the descriptor that becomes the child's standard error.
    /// - Returns: the running child.
    /// - Throws: the `posix_spawn` error number, as a message.
    static func spawn(
        executable: String,
        arguments: [String],
        environment: [String: String],
        workingDirectory: String?,
        output: Int32,
        error: Int32
    ) throws(SpawnFailure) -> ChildProcess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, error, 2)
        closeDescriptorsAboveTwo(&actions)
        if let workingDirectory, let addChdir = Symbols.addChdir {
            _ = workingDirectory.withCString { addChdir(&actions, $0) }
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaultSignals = sigset_t()
        sigfillset(&defaultSignals)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigdefault(&attributes, &defaultSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var processID = pid_t()
        let status = posix_spawn(&processID, executable, &actions, &attributes, argv, envp)
        guard status == 0 else {
            throw SpawnFailure(reason: String(cString: strerror(status)))
        }
        return ChildProcess(processID: processID)
    }

    /// Waits for the child to exit and reaps it.
    /// - Parameter timeout: how long to wait; nil waits for ever.
    /// - Returns: the exit status (128 + the signal number when killed by a signal), or nil on timeout,
    ///   in which case the child still runs and must be waited for again.
    func wait(timeout: Duration?) -> Int32? {
        let clock = ContinuousClock()
        let deadline = timeout.map { clock.now + $0 }
        var pause = 0.002
        while true {
            var status: Int32 = 0
            let result = waitpid(processID, &status, WNOHANG)
            if result == processID {
                let signal = status & 0x7F
                return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
            }
            if result == -1, errno != EINTR {
                return 255  // not our child any more (reaped elsewhere): report a failure
            }
            if let deadline, clock.now >= deadline {
                return nil
            }
            Thread.sleep(forTimeInterval: pause)
            pause = min(pause * 2, 0.05)
        }
    }

    /// Sends `signal` to the child.
    func send(_ signal: Int32) {
        kill(processID, signal)
    }

    /// Adds "close every descriptor from 3 up" to `actions`: one `closefrom` action where the C library has
    /// it (glibc 2.34+), else one close per descriptor open now.
    private static func closeDescriptorsAboveTwo(_ actions: inout posix_spawn_file_actions_t) {
        if let addClosefrom = Symbols.addClosefrom {
            _ = addClosefrom(&actions, 3)
            return
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/fd")) ?? []
        for descriptor in open.compactMap({ Int32($0) }) where descriptor > 2 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
    }
}

/// `posix_spawn` failed; `reason` is the C library's text for the error number.
struct SpawnFailure: Error {
    /// Why the program could not be started.
    let reason: String
}

/// glibc extensions that Swift's Glibc module does not export (they need `_GNU_SOURCE`), looked up at run time.
private enum Symbols {
    typealias AddClosefrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    typealias AddChdir = @convention(c) (
        UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>
    ) -> Int32

    /// `posix_spawn_file_actions_addclosefrom_np`, glibc 2.34+.
    static let addClosefrom: AddClosefrom? = lookUp("posix_spawn_file_actions_addclosefrom_np")
    /// `posix_spawn_file_actions_addchdir_np`, glibc 2.29+.
    static let addChdir: AddChdir? = lookUp("posix_spawn_file_actions_addchdir_np")

    private static func lookUp<Function>(_ name: String) -> Function? {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, name) else {
            return nil
        }
        return unsafeBitCast(symbol, to: Function.self)
    }
}
