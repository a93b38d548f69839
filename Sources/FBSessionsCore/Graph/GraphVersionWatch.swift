import Foundation
import GraphVersions
import Support

/// Which Graph API version each app asks for, which one Facebook answers with, and what an operator should hear
/// about it (docs/graph-versions.md).
///
/// - The Graph client tells it the `facebook-api-version` header of every answer (``observe(facebookAppID:requested:served:)``).
///   It counts them in `fbs_graph_version_served_total{app,requested,served}` and records the latest in the
///   app's row, so that `GET /v1/app` on any instance shows it: at most once a minute per app and instance, and
///   at once when the served version changes.
/// - ``report(for:)`` is what `GET /v1/app` shows: the version asked for, its last day on Meta's table, the
///   latest served version and the warnings.
/// - ``run()`` (started by `serve`) keeps `fbs_graph_version_days_left{app}` current and writes a `warning` log
///   line for each standing warning at start and once a day.
public final class GraphVersionWatch: Sendable {
    /// What `GET /v1/app` shows of an app's version.
    public struct Report: Sendable, Equatable {
        /// The version the app's calls use.
        public let requested: GraphVersion
        /// Its last day on Meta's table; nil when the table has none.
        public let availableUntil: CalendarDay?
        /// What Facebook's latest answer to a call of that version named; nil before any.
        public let served: ServedGraphVersion?
        /// What an operator should know.
        public let warnings: [GraphVersionWarning]
    }

    private struct State {
        /// App names by Facebook app id, for the metric's `app` label.
        var names: [String: String] = [:]
        /// Each app's requested version by name, for the days-left gauge (refreshed by ``refresh()``).
        var requested: [String: GraphVersion] = [:]
        /// What this instance last wrote to each app's row, by Facebook app id.
        var recorded: [String: ServedGraphVersion] = [:]
    }

    /// How often an instance writes the served version of an app whose answers keep naming the same one.
    static let recordInterval: TimeInterval = 60

    private let apps: any AppStore
    private let defaultVersion: GraphVersion
    private let table: GraphVersionTable
    private let clock: @Sendable () -> Date
    private let logger: Logger
    private let served: Counter
    private let state = Locked(State())
    /// Concurrent reloads of the apps share one query.
    private let reloads = SingleFlight<Int, [App]>()

    /// Creates the watch and registers its metrics.
    /// - Parameters:
    ///   - apps: where apps and their served versions are kept.
    ///   - defaultVersion: `FBS_GRAPH_VERSION`, for apps without one of their own.
    ///   - table: Meta's versions table.
    ///   - metrics: where `fbs_graph_version_served_total` and `fbs_graph_version_days_left` go.
    ///   - logger: where the warnings go.
    ///   - clock: the current time (tests move it).
    public init(
        apps: any AppStore, defaultVersion: GraphVersion, table: GraphVersionTable = .meta, metrics: MetricsRegistry,
        logger: Logger, clock: @escaping @Sendable () -> Date = Date.init
    ) {
        self.apps = apps
        self.defaultVersion = defaultVersion
        self.table = table
        self.clock = clock
        self.logger = logger
        served = metrics.counter(
            "fbs_graph_version_served_total",
            help: "Graph answers by app, the version asked for and the version that answered (facebook-api-version).")
        metrics.gauge(
            "fbs_graph_version_days_left",
            help: "Days until the last day Facebook serves each app's Graph version (negative: past it); "
                + "absent when Meta's table gives no day."
        ) { [self] in
            let today = CalendarDay(unixSeconds: self.clock().timeIntervalSince1970)
            return state.withLock { $0.requested }.sorted { $0.key < $1.key }.compactMap { name, version in
                self.table.release(of: version)?.availableUntil.map { ([("app", name)], Double(today.days(until: $0))) }
            }
        }
    }

    /// The version an app's calls use.
    public func requestedVersion(of app: App) -> GraphVersion {
        app.graphVersion.flatMap(GraphVersion.init) ?? defaultVersion
    }

    /// Takes note of one Graph answer: counts it and, when due, records it in the app's row. Returns at once; any
    /// database work runs on a task of its own, and a failure there is only logged.
    public func observe(facebookAppID: String, requested: String, served: String) {
        let now = clock()
        let record = ServedGraphVersion(requested: requested, served: served, at: now)
        let (name, due): (String?, Bool) = state.withLock { state in
            let last = state.recorded[facebookAppID]
            let due = last.map { $0.served != served || $0.requested != requested || now.timeIntervalSince($0.at) >= Self.recordInterval } ?? true
            if due { state.recorded[facebookAppID] = record }
            return (state.names[facebookAppID], due)
        }
        if let name {
            count(name: name, record)
            if !due { return }
        }
        Task { [self] in
            if name == nil {
                await refresh()
                count(name: state.withLock { $0.names[facebookAppID] } ?? facebookAppID, record)
            }
            guard due else { return }
            do {
                try await apps.recordServedGraphVersion(record, facebookAppID: facebookAppID)
            } catch {
                state.withLock { if $0.recorded[facebookAppID] == record { $0.recorded[facebookAppID] = nil } }
                logger.warning("could not record the served Graph version", ["error": .string("\(error)")])
            }
        }
    }

    /// What `GET /v1/app` shows for `app`, read from the database now (an `app update` on another host shows at
    /// once).
    public func report(for app: App) async throws -> Report {
        let (stored, served) = try await apps.graphVersions(ofApp: app.id)
        let requested = stored.flatMap(GraphVersion.init) ?? defaultVersion
        // A served version recorded for a version the app no longer asks for says nothing about the new one.
        let current = served.flatMap { $0.requested == requested.description ? $0 : nil }
        let today = CalendarDay(unixSeconds: clock().timeIntervalSince1970)
        return Report(
            requested: requested, availableUntil: table.release(of: requested)?.availableUntil, served: current,
            warnings: table.warnings(requested: requested, served: current.flatMap { GraphVersion($0.served) }, on: today))
    }

    /// Reloads the apps: names for the metric's label, and each app's version for the days-left gauge. Callers
    /// that come while a reload runs share it.
    /// - Returns: the apps read, or nil when they could not be read (the failure is logged).
    @discardableResult
    public func refresh() async -> [App]? {
        do {
            return try await reloads.run(key: 0) { [self] in
                let all = try await apps.apps()
                state.withLock { state in
                    state.names = Dictionary(all.map { ($0.facebookAppID, $0.name) }, uniquingKeysWith: { first, _ in first })
                    state.requested = Dictionary(
                        all.map { ($0.name, requestedVersion(of: $0)) }, uniquingKeysWith: { first, _ in first })
                }
                return all
            }
        } catch {
            logger.warning("could not read the apps' Graph versions", ["error": .string("\(error)")])
            return nil
        }
    }

    /// Writes one `warning` line per standing warning of every app; returns how many it wrote.
    @discardableResult
    public func logWarnings() async -> Int {
        guard let all = await refresh() else { return 0 }
        var written = 0
        for app in all {
            guard let report = try? await report(for: app) else { continue }
            for warning in report.warnings {
                var fields: [String: Logger.Value] = [
                    "app": .string(app.name), "code": .string(warning.code.rawValue),
                    "requested": .string(warning.requested.description),
                ]
                if let until = warning.availableUntil { fields["available_until"] = .string(until.description) }
                if let served = warning.served { fields["served"] = .string(served.description) }
                logger.warning(warning.message, fields)
                written += 1
            }
        }
        return written
    }

    /// Until cancelled: the warnings now and every `warningInterval`, and the apps reloaded every `refreshInterval`
    /// in between (so the days-left gauge follows an `app update`).
    public func run(warningInterval: Duration = .seconds(86_400), refreshInterval: Duration = .seconds(300)) async {
        let clock = ContinuousClock()
        var nextWarning = clock.now
        while !Task.isCancelled {
            if clock.now >= nextWarning {
                await logWarnings()
                nextWarning = clock.now + warningInterval
            } else {
                await refresh()
            }
            try? await Task.sleep(for: min(refreshInterval, nextWarning - clock.now))
        }
    }

    private func count(name: String, _ record: ServedGraphVersion) {
        served.increment([("app", name), ("requested", record.requested), ("served", record.served)])
    }
}
