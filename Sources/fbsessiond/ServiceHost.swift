import FBSessionsAPI
import FBSessionsCore
import FBSessionsService
import Foundation
import HTTPServer
import Support

/// Starts the HTTP service on a runtime and runs it until SIGTERM or SIGINT, then stops it in order: stop
/// accepting, drain in-flight requests, close the pool.
enum ServiceHost {
    /// Serves until SIGTERM or SIGINT, then stops in order (``RunningService/stop(reason:)``).
    ///
    /// - Parameters:
    ///   - runtime: The settings, pool and migrator.
    ///   - signals: SIGTERM and SIGINT, caught since before anything was started (by default, from this call on,
    ///     which is before the server listens).
    ///   - whenListening: Called once the server listens (the printout of `fbsessiond run`).
    static func serve(
        _ runtime: Runtime, signals: TerminationSignals = TerminationSignals(), whenListening: (Server) -> Void = { _ in }
    ) async throws {
        let service = try start(runtime)
        ProcessMemory.startReclaiming()  // Once per process, so here rather than in `start`.
        whenListening(service.server)
        let signal = await signals.wait()
        await service.stop(reason: signal)
        StandardErrorLogHandler.flush()
    }

    /// Builds the service on `runtime` as `serve` runs it (``ServiceAssembly``), starts the HTTP server, the event
    /// listener (on the direct URL), the webhook dispatcher, the sweep and the Graph version watch (its warnings at
    /// start and daily), and returns them running (tests drive
    /// this too).
    ///
    /// - Parameter runtime: The settings, pool and migrator.
    /// - Returns: The running service; ``RunningService/stop(reason:)`` ends it.
    /// - Throws: ``CommandFailure`` for an unusable setting or a missing file.
    static func start(_ runtime: Runtime) throws -> RunningService {
        let settings = runtime.settings
        let parts = ServiceParts(
            settings: settings,
            openAPIDocument: OpenAPIDocument.serving(try OpenAPIFile.load(), publicURL: settings.publicURL),
            docsPage: try DocsPageFile.load(logger: runtime.logger))
        let service = try assemble(parts, on: runtime)
        let server: Server
        do {
            server = try service.server { $0 }
        } catch let error as ServerError {
            service.shutdown()
            throw CommandFailure(error.description)
        }
        runtime.logger.info("listening", ["address": .string("\(settings.listenHost):\(server.port)")])
        for warning in settings.warnings { runtime.logger.warning(warning) }
        service.notifications.start()
        service.webhooks.start()
        let sweeping = SweepCommand.loop(
            sessions: service.sessions, store: service.store, settings: settings, logger: runtime.logger)
        let versions = service.graphVersions
        let watching = Task { await versions.run() }
        return RunningService(
            runtime: runtime, service: service, server: server, sweeping: sweeping, watching: watching)
    }

    /// The service `parts` describe on the runtime's database (``ServiceAssembly``), for `serve` and `sweep`.
    /// - Throws: ``CommandFailure`` for an unusable setting or a missing key ring.
    static func assemble(_ parts: ServiceParts, on runtime: Runtime) throws -> ServiceAssembly {
        let database = ServiceDatabase(
            database: runtime.database, keyring: try runtime.keyring(), migrator: runtime.migrator,
            listenerURL: runtime.directDatabaseURL)
        do {
            return try ServiceAssembly(parts, database: database)
        } catch let error as ServiceSettingError {
            throw CommandFailure(error.description)
        }
    }
}

/// `openapi.yaml`, found like the migrations: `FBS_OPENAPI_FILE`, `./openapi.yaml`, the installed copy, or above
/// the executable in a source checkout.
enum OpenAPIFile {
    static func load(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> [UInt8] {
        for url in ResourceLocator.candidates("openapi.yaml", setting: "FBS_OPENAPI_FILE", environment: environment) {
            if let data = FileManager.default.contents(atPath: url.path) { return Array(data) }
        }
        throw CommandFailure("openapi.yaml not found; set FBS_OPENAPI_FILE")
    }
}

/// `docs.html`, the try-it page served at `/docs`, found like `openapi.yaml` (and installed beside it):
/// `FBS_DOCS_FILE`, `./docs.html`, the installed `share/fbsessiond/docs.html`, or above the executable.
enum DocsPageFile {
    /// The page; a placeholder (and a warning) when it is not installed, since the service works without it.
    /// - Throws: ``CommandFailure`` when `FBS_DOCS_FILE` names a file that cannot be read.
    static func load(
        logger: Logger, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> DocsPage {
        for url in ResourceLocator.candidates("docs.html", setting: "FBS_DOCS_FILE", environment: environment) {
            if let data = FileManager.default.contents(atPath: url.path) { return DocsPage(html: Array(data)) }
        }
        if let configured = environment["FBS_DOCS_FILE"], !configured.isEmpty {
            throw CommandFailure("FBS_DOCS_FILE: cannot read \(configured)")
        }
        logger.warning("docs.html not found; /docs serves a placeholder", ["setting": .string("FBS_DOCS_FILE")])
        return .placeholder
    }
}
