import FBSessionsCore
import FBSessionsService
import FBSessionsStorage
import Foundation
import Support

/// `fbsessiond sweep` (one pass, for cron) and the sweep loop inside `serve`.
enum SweepCommand {
    static func policy(_ settings: Settings) -> Sweeper.Policy {
        var policy = Sweeper.Policy()
        policy.sessionsPerSecond = settings.sweepRate
        policy.maxAge = settings.sweepMaxAge
        policy.auditRetentionDays = settings.auditRetentionDays
        return policy
    }

    /// One pass, then exit.
    static func run(_ arguments: Arguments) async throws {
        if arguments.flag("help") { return print(Help.sweep) }
        let runtime = try Runtime(settings: try Runtime.adminSettings(), applicationName: "fbsessiond-sweep")
        defer { runtime.shutdown() }
        let service = try assembly(runtime)
        defer { service.shutdown() }
        let report = try await Sweeper(service: service.sessions, store: service.store, policy: policy(runtime.settings))
            .pass()
        print(
            "validated \(report.validated), extended \(report.extended), closed \(report.closed), "
                + "deferred \(report.deferred), expiring \(report.expiring), revoked \(report.revoked), "
                + "revocations pending \(report.revocationsPending), "
                + "audit entries past retention deleted \(report.auditEntriesPruned)")
    }

    /// The service a pass runs on: as `serve` wires it, without an exact cache (a one-off pass has no listener to
    /// keep one current).
    static func assembly(_ runtime: Runtime) throws -> ServiceAssembly {
        var parts = ServiceParts(settings: runtime.settings)
        parts.cache = .given(nil)
        return try ServiceHost.assemble(parts, on: runtime)
    }

    /// The sweep inside `serve`: a pass every `FBS_SWEEP_INTERVAL` seconds until cancelled, waiting longer (up to
    /// 8 intervals) while Graph fails (``SweepBackoff``).
    static func loop(sessions: SessionService, store: PostgresSessionStore, settings: Settings, logger: Logger) -> Task<Void, Never> {
        Task.detached {
            guard settings.sweepInterval > 0 else { return }
            let sweeper = Sweeper(service: sessions, store: store, policy: policy(settings))
            var backoff = SweepBackoff(interval: settings.sweepInterval)
            while !Task.isCancelled {
                var pause = backoff.interval
                do {
                    let report = try await sweeper.pass()
                    pause = backoff.next(after: report)
                    if report != SweepReport() {
                        logger.info(
                            "sweep",
                            [
                                "validated": .int(report.validated), "extended": .int(report.extended),
                                "closed": .int(report.closed), "deferred": .int(report.deferred),
                                "expiring": .int(report.expiring),
                                "revoked": .int(report.revoked), "revocations_pending": .int(report.revocationsPending),
                                "next_pass_in": .int(Int(pause)),
                            ])
                    }
                } catch is CancellationError {
                    return
                } catch {
                    logger.warning("sweep failed", ["error": .string(String(describing: error))])
                    pause = backoff.nextAfterError()
                }
                try? await Task.sleep(nanoseconds: UInt64(pause * 1e9))
            }
        }
    }
}
