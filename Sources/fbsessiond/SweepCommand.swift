import FBSessionsCore
import FBSessionsGraph
import FBSessionsStorage
import Foundation
import Support

/// `fbsessiond sweep` (one pass, for cron) and the sweep loop inside `serve`.
enum SweepCommand {
    static func policy(_ settings: Settings) -> Sweeper.Policy {
        var policy = Sweeper.Policy()
        policy.sessionsPerSecond = settings.sweepRate
        policy.maxAge = settings.sweepMaxAge
        return policy
    }

    /// One pass, then exit.
    static func run(_ arguments: Arguments) async throws {
        if arguments.flag("help") { return print(Help.sweep) }
        let runtime = try Runtime(settings: try Runtime.settings(), applicationName: "fbsessiond-sweep")
        defer { runtime.shutdown() }
        let keyring = try runtime.keyring()
        let graph = try GraphClient(configuration: .init(settings: runtime.settings))
        defer { graph.shutdown() }
        let store = PostgresSessionStore(database: runtime.database, keyring: keyring)
        let sessions = SessionService(
            store: store, graph: graph, apps: try runtime.apps, policy: ServiceHost.policy(runtime.settings))
        let report = try await Sweeper(service: sessions, store: store, policy: policy(runtime.settings)).pass()
        print(
            "validated \(report.validated), extended \(report.extended), closed \(report.closed), "
                + "deferred \(report.deferred), revoked \(report.revoked), revocations pending \(report.revocationsPending)")
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
