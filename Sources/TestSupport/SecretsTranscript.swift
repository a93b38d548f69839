import Foundation
import GraphEmulator
import HTTPServer
import Postgres
import Support

/// The Swift suite's part of the whole-suite secrets scan (docs/reliability.md, "Secrets: the whole suite").
///
/// Off unless `FBS_SECRETS_TRANSCRIPT_DIR` is set (`scripts/test` sets it for a full run). When on, in
/// `$FBS_SECRETS_TRANSCRIPT_DIR/swift/`, each test process writes:
/// - `service-<pid>.log`: every log line of the service components the harnesses build (the HTTP observer, the
///   Graph client, webhooks, events), at `debug` whatever level the harness asked for;
/// - `responses-<pid>.txt`: every response the service under test gave (through a socket or ``RouteCaller``), as
///   `tools/secrets/transcript.py` records them: a `#fbs-response METHOD PATH STATUS HEAD BODY` line, then the
///   head and the body as sent;
/// - `databases-<pid>.txt`: every row of every table of each test database, as PostgreSQL's text of the row,
///   taken by ``TestDatabase/drop(_:)`` just before the database is dropped.
///
/// The secrets the harnesses create (API keys, encryption keys, app secrets) are noted in the run's ledger
/// (``SecretLedger``, `FBS_SECRETS_LEDGER`) through ``noted(_:_:)`` and ``noteKeyring(_:)``; the Graph emulator
/// notes the tokens, codes and app secrets it mints. `tools/secrets/scan-run` then searches the whole run for
/// every one of them. Nothing here prints a secret.
///
/// Thread safety: every function may be called from any thread; each file is appended with one `write(2)` per
/// record under its own lock.
public enum SecretsTranscript {
    /// `$FBS_SECRETS_TRANSCRIPT_DIR/swift`, created on first use; nil when the transcript is off.
    static let directory: String? = {
        guard let base = ProcessInfo.processInfo.environment["FBS_SECRETS_TRANSCRIPT_DIR"], !base.isEmpty else {
            return nil
        }
        let directory = base + "/swift"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory
    }()

    /// Whether the transcript is on.
    public static var isOn: Bool { directory != nil }

    static let logFile = TranscriptFile(name: "service")
    static let responseFile = TranscriptFile(name: "responses")
    static let databaseFile = TranscriptFile(name: "databases")

    // MARK: Logs

    /// The logger for a service component a harness builds: `Logger(label:level:)` on standard error as before
    /// when the transcript is off; at `debug` into `service-<pid>.log` when it is on.
    /// - Parameters:
    ///   - label: the logger's label.
    ///   - level: the level when the transcript is off.
    /// - Returns: the logger.
    public static func logger(_ label: String, level: Logger.Level = .info) -> Logger {
        guard isOn else { return Logger(label: label, level: level) }
        return Logger(label: label, level: .debug, handler: TranscriptLogHandler())
    }

    // MARK: Responses

    /// `handler` as it is, and, when the transcript is on, with every response it gives recorded.
    /// - Parameter handler: the service's request handler (its `Router`).
    /// - Returns: a handler to give the `Server`.
    public static func recording<Handler: RequestHandler>(_ handler: Handler) -> RecordingHandler<Handler> {
        RecordingHandler(base: handler)
    }

    /// Records one response of the service under test (no-op when the transcript is off).
    /// - Parameters:
    ///   - head: the request's head (its method and path name the record; the query string is left out).
    ///   - response: the response.
    public static func record(_ head: RequestHead, _ response: Response) {
        guard isOn, !response.dropsConnection else { return }
        var text = "HTTP/1.1 \(response.status)\r\n"
        for field in response.headers {
            text += field.name + ": " + field.value + "\r\n"
        }
        text += "\r\n"
        let headBytes = Array(text.utf8)
        let first = "#fbs-response \(printable(head.method)) \(printable(head.path)) \(response.status)"
        var record = Array((first + " \(headBytes.count) \(response.body.count)\n").utf8)
        record += headBytes
        record += response.body
        record.append(UInt8(ascii: "\n"))
        responseFile.append(record)
    }

    /// `text` with every byte outside printable ASCII (and `%`) percent-encoded, for the record's first line.
    static func printable(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            if byte > 0x20 && byte < 0x7f && byte != UInt8(ascii: "%") {
                output.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                output += String(format: "%%%02X", byte)
            }
        }
        return output.isEmpty ? "-" : output
    }

    // MARK: Secrets

    /// Notes a secret a test made in the run's ledger, and returns it (for use inline).
    /// - Parameters:
    ///   - kind: what it is: `api key`, `app secret`, `webhook secret`, ...
    ///   - value: the secret.
    /// - Returns: `value`.
    @discardableResult
    public static func noted(_ kind: String, _ value: String) -> String {
        SecretLedger.note(kind, value)
        return value
    }

    /// Notes every key of a keyring in settings form (`kid:base64,...`): the base64 text and the raw bytes.
    /// - Parameter text: the keyring text.
    public static func noteKeyring(_ text: String) {
        guard SecretLedger.isEnabled else { return }
        for entry in text.split(separator: ",") {
            guard let colon = entry.firstIndex(of: ":") else { continue }
            let encoded = String(entry[entry.index(after: colon)...])
            SecretLedger.note("encryption key", encoded)
            if let bytes = Data(base64Encoded: encoded) {
                SecretLedger.note("encryption key bytes", bytes: Array(bytes))
            }
        }
    }

    /// Notes the keys of a generated keyring (`Keyring.generate()`'s answer) and returns it unchanged.
    /// - Parameter generated: the keyring and its settings text.
    /// - Returns: `generated`.
    public static func notingKeyring<Ring>(_ generated: (ring: Ring, text: String)) -> (ring: Ring, text: String) {
        noteKeyring(generated.text)
        return generated
    }

    // MARK: Databases

    /// Appends every row of every table of the database at `url` to `databases-<pid>.txt` (no-op when off).
    /// - Parameter url: a test database's URL.
    static func dumpDatabase(_ url: String) {
        guard isOn, let connection = try? PostgresConnection(connectionString: url) else { return }
        defer { connection.close() }
        guard
            let tables = try? connection.simpleQuery(
                unsafeSQL: """
                    SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_class c
                    JOIN pg_namespace n ON n.oid = c.relnamespace
                    WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
                    ORDER BY 1
                    """)
        else { return }
        var text = "-- database \(url.split(separator: "/").last.map(String.init) ?? "?")\n"
        for row in tables {
            guard let table = try? row.decode(0, as: String.self),
                let rows = try? connection.simpleQuery(unsafeSQL: "SELECT t::text FROM \(table) t")
            else { continue }
            for line in rows {
                text += table + "\t" + ((try? line.decode(0, as: String.self)) ?? "") + "\n"
            }
        }
        databaseFile.append(Array(text.utf8))
    }
}

/// A request handler that gives every response of another to ``SecretsTranscript/record(_:_:)``.
public struct RecordingHandler<Base: RequestHandler>: RequestHandler {
    /// The handler that answers.
    public let base: Base

    public func inspect(_ head: RequestHead) -> HeadDecision {
        switch base.inspect(head) {
        case .reject(let response, let route):
            SecretsTranscript.record(head, response)
            return .reject(response, route: route)
        case .proceed(let route, let respond):
            guard SecretsTranscript.isOn else { return .proceed(route: route, respond: respond) }
            return .proceed(route: route) { request in
                respond(request).map { response in
                    SecretsTranscript.record(request.head, response)
                    return response
                }
            }
        }
    }

    public func completed(_ record: ExchangeRecord) {
        base.completed(record)
    }
}

/// Writes each record as one JSON line to the transcript's `service-<pid>.log`.
struct TranscriptLogHandler: LogHandler {
    func write(_ record: LogRecord) {
        SecretsTranscript.logFile.append(Array((record.jsonLine + "\n").utf8))
    }
}

/// One append-only file of the transcript, `<name>-<pid>.<ext>`, opened on first use.
final class TranscriptFile: Sendable {
    private let name: String
    /// The file's descriptor: -2 until the first append opens it, -1 when there is no transcript or it did not
    /// open. Its lock is held for the whole of each append, so that lines never interleave.
    private let descriptor = Locked<Int32>(-2)

    init(name: String) {
        self.name = name
    }

    /// Appends `bytes` with one `write(2)` (continued if partial).
    func append(_ bytes: [UInt8]) {
        descriptor.withLock { descriptor in
            if descriptor == -2 {
                guard let directory = SecretsTranscript.directory else {
                    descriptor = -1
                    return
                }
                let suffix = name == "service" ? "log" : "txt"
                descriptor = open(
                    "\(directory)/\(name)-\(getpid()).\(suffix)", O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
            }
            guard descriptor >= 0 else { return }
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let written = write(descriptor, raw.baseAddress.map { $0 + offset }, raw.count - offset)
                    if written <= 0 { return }
                    offset += written
                }
            }
        }
    }
}
