import Foundation

/// A structured logger in the shape of swift-log: a label, a level, metadata, and a handler that writes.
///
/// Messages are fixed strings; values go in metadata (`.ci/run` rejects interpolated messages), so a log line
/// never mixes text with data and secrets are never formatted in by accident.
public struct Logger: Sendable {
    /// Severity, lowest first.
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error

        /// The name used in settings and log lines.
        public var name: String {
            switch self {
            case .debug: "debug"
            case .info: "info"
            case .warning: "warning"
            case .error: "error"
            }
        }

        /// Parses `debug`, `info`, `warning` (or `warn`) and `error`.
        public init?(name: String) {
            switch name.lowercased() {
            case "debug": self = .debug
            case "info": self = .info
            case "warning", "warn": self = .warning
            case "error": self = .error
            default: return nil
            }
        }

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// A metadata value.
    public enum Value: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
        case string(String)
        case int(Int)
        case double(Double)
        case bool(Bool)

        public init(stringLiteral value: String) { self = .string(value) }
        public init(integerLiteral value: Int) { self = .int(value) }

        var json: String {
            switch self {
            case .string(let text): JSONText.quoted(text)
            case .int(let number): String(number)
            case .double(let number): number.isFinite ? String(number) : "null"
            case .bool(let flag): flag ? "true" : "false"
            }
        }
    }

    /// The logger's name, written as `logger`.
    public let label: String
    /// Records below this level are dropped.
    public var level: Level
    /// Metadata added to every record of this logger.
    public var metadata: [String: Value] = [:]
    private let handler: any LogHandler

    /// Creates a logger writing to `handler`.
    public init(label: String, level: Level = .info, handler: any LogHandler = StandardErrorLogHandler.shared) {
        self.label = label
        self.level = level
        self.handler = handler
    }

    /// Gets or sets one metadata value.
    public subscript(metadataKey key: String) -> Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes a record when `level` is at or above the logger's level.
    public func log(_ level: Level, _ message: String, _ extra: [String: Value] = [:]) {
        guard level >= self.level else { return }
        var merged = metadata
        for (key, value) in extra { merged[key] = value }
        if let ids = LogTrace.currentIDs {
            merged["trace_id"] = .string(ids.traceID)
            merged["span_id"] = .string(ids.spanID)
        }
        handler.write(LogRecord(time: Date(), level: level, label: label, message: message, metadata: merged))
    }

    /// Writes a record whose metadata is `fields`, when `level` is at or above the logger's level. With no
    /// logger metadata to merge, the handler gets the fields as they are (``LogHandler/write(time:level:label:message:fields:)``),
    /// so a hot caller builds no dictionary, sorts no keys and looks nothing up (docs/performance.md, "Figures behind
    /// the code").
    public func log<Fields: LogFields>(_ level: Level, _ message: String, fields: Fields) {
        guard level >= self.level else { return }
        guard metadata.isEmpty, !(LogTrace.isEnabled && LogTrace.current != nil) else {
            log(level, message, fields.metadata)
            return
        }
        handler.write(time: Date(), level: level, label: label, message: message, fields: fields)
    }

    /// Writes at `debug`.
    public func debug(_ message: String, _ extra: [String: Value] = [:]) { log(.debug, message, extra) }
    /// Writes at `info`.
    public func info(_ message: String, _ extra: [String: Value] = [:]) { log(.info, message, extra) }
    /// Writes at `warning`.
    public func warning(_ message: String, _ extra: [String: Value] = [:]) { log(.warning, message, extra) }
    /// Writes at `error`.
    public func error(_ message: String, _ extra: [String: Value] = [:]) { log(.error, message, extra) }
}

/// One log record.
public struct LogRecord: Sendable {
    /// When it was made.
    public let time: Date
    /// Its level.
    public let level: Logger.Level
    /// The logger's label.
    public let label: String
    /// The fixed message.
    public let message: String
    /// Values.
    public let metadata: [String: Logger.Value]

    /// The record as one line of JSON: `time`, `level`, `logger`, `msg`, then metadata keys in sorted order.
    public var jsonLine: String {
        var line = #"{"time":""# + RFC3339.string(from: time) + #"","level":""# + level.name + #"","logger":"#
        line += JSONText.quoted(label) + #","msg":"# + JSONText.quoted(message)
        for key in metadata.keys.sorted() {
            line += "," + JSONText.quoted(key) + ":" + (metadata[key]?.json ?? "null")
        }
        return line + "}"
    }
}

/// Metadata with a fixed set of keys that a hot caller writes straight into a log line's bytes.
///
/// The two members must agree: ``appendJSON(to:)`` writes exactly what ``LogRecord/jsonLine`` writes after `msg`
/// for a record whose metadata is ``metadata``: `,"key":value` per key, keys in ascending order, values as
/// ``Logger/Value`` renders them (``LogLineWriter``'s `quoted`, `int` and `double` do). ``jsonFieldsText()``
/// helps a test compare them.
public protocol LogFields {
    /// The fields as metadata, for handlers that keep records and for merging with a logger's own metadata.
    var metadata: [String: Logger.Value] { get }
    /// Writes `,"key":value` for every field, keys in ascending (byte) order.
    func appendJSON(to writer: inout LogLineWriter)
}

/// Where log records go.
public protocol LogHandler: Sendable {
    /// Writes one record. Called from any thread.
    func write(_ record: LogRecord)

    /// Writes one record whose metadata is `fields`. Called from any thread. The default makes a ``LogRecord``
    /// of ``LogFields/metadata``; a handler that writes bytes can use ``LogFields/appendJSON(to:)`` instead.
    func write<Fields: LogFields>(time: Date, level: Logger.Level, label: String, message: String, fields: Fields)
}

extension LogHandler {
    public func write<Fields: LogFields>(time: Date, level: Logger.Level, label: String, message: String, fields: Fields) {
        write(LogRecord(time: time, level: level, label: label, message: message, metadata: fields.metadata))
    }
}

/// Writes each record as one JSON line on standard error. Lines are buffered and written whole by a background
/// thread within a few milliseconds (``StandardErrorBuffer``); `warning` and `error` lines are written at once,
/// and ``flush()`` (also run at exit) writes whatever is buffered.
public struct StandardErrorLogHandler: LogHandler {
    /// The shared handler.
    public static let shared = StandardErrorLogHandler()

    /// Writes the record.
    public func write(_ record: LogRecord) {
        StandardErrorBuffer.shared.append(record, urgent: record.level >= .warning)
    }

    /// Writes the record's line straight from `fields`, with no dictionary: into a scratch buffer on the stack,
    /// then copied whole into the shared buffer under its lock. A line longer than the scratch buffer is written
    /// the general way.
    public func write<Fields: LogFields>(time: Date, level: Logger.Level, label: String, message: String, fields: Fields) {
        let urgent = level >= .warning
        let written: Bool = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1024) { scratch in
            var writer = LogLineWriter(scratch)
            LogRecord.writeJSONLine(time: time, level: level, label: label, message: message, fields: fields, to: &writer)
            guard !writer.overflowed else { return false }
            StandardErrorBuffer.shared.append(writer.written, urgent: urgent)
            return true
        }
        if !written {
            write(LogRecord(time: time, level: level, label: label, message: message, metadata: fields.metadata))
        }
    }

    /// Writes every buffered line now; returns once they are written.
    public static func flush() {
        StandardErrorBuffer.shared.flush()
    }
}

/// Keeps records in memory, for tests.
public final class InMemoryLogHandler: LogHandler, Sendable {
    private let stored = Locked<[LogRecord]>([])

    /// Creates an empty handler.
    public init() {}

    /// Stores the record.
    public func write(_ record: LogRecord) { stored.withLock { $0.append(record) } }

    /// Every record so far.
    public var records: [LogRecord] { stored.withLock { $0 } }
}
