import Foundation
import HTTPServer
import Support

/// A small OTLP/HTTP collector for tests, on the project's own HTTP server: it captures every POST to
/// `/v1/traces` and answers as its ``Mode`` says (accept, refuse with 503, or never answer).
public final class OTLPCollector: Sendable {
    /// How it answers.
    public enum Mode: Sendable {
        /// 200 with an empty `ExportTraceServiceResponse`.
        case accept
        /// 503, as a collector that is overloaded or failing.
        case refuse
        /// No answer until the server stops (a collector that hangs).
        case hang
    }

    /// A captured export.
    public struct Export: Sendable {
        public let contentType: String?
        public let headers: [(String, String)]
        public let body: [UInt8]
        /// The spans in it, decoded.
        public var spans: [OTLPDecodedSpan] { (try? OTLPDecoded.spans(in: body)) ?? [] }
        /// The resource's attributes, decoded.
        public var resource: [String: String] { (try? OTLPDecoded.resource(in: body)) ?? [:] }
    }

    private let server: Server
    private let captured: Locked<[Export]>

    /// Starts a collector on a free loopback port.
    public init(mode: Mode) throws {
        let captured = Locked<[Export]>([])
        self.captured = captured
        var configuration = ServerConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.threads = 1
        configuration.handlerTimeout = 600
        configuration.maxBodyBytes = 16 << 20
        server = try Server(configuration: configuration, handler: Handler(mode: mode, captured: captured))
    }

    /// The `OTEL_EXPORTER_OTLP_ENDPOINT` value (the base; spans go to `/v1/traces`).
    public var baseURL: String { "http://127.0.0.1:\(server.port)" }

    /// Every export received so far.
    public var exports: [Export] { captured.withLock { $0 } }

    /// Every span received so far.
    public var spans: [OTLPDecodedSpan] { exports.flatMap(\.spans) }

    /// Stops the server (a hanging request is cut off).
    public func stop() {
        server.shutdown(gracePeriod: 0)
    }

    private struct Handler: RequestHandler {
        let mode: Mode
        let captured: Locked<[Export]>

        func inspect(_ head: RequestHead) -> HeadDecision {
            guard head.method == "POST", head.path == "/v1/traces" else {
                return .reject(Response(status: 404), route: nil)
            }
            return .proceed(route: "/v1/traces") { [mode, captured] request in
                let headers = request.head.headers.map { ($0.name, $0.value) }
                captured.withLock {
                    $0.append(Export(contentType: request.head.headers["Content-Type"], headers: headers, body: request.body))
                }
                switch mode {
                case .accept:
                    return .now(Response(status: 200, headers: ["Content-Type": "application/x-protobuf"]))
                case .refuse:
                    return .now(Response(status: 503))
                case .hang:
                    return .later {
                        try? await Task.sleep(for: .seconds(300))
                        return Response(status: 200)
                    }
                }
            }
        }

        func completed(_ record: ExchangeRecord) {}
    }
}

/// A span as a test reads it back from an OTLP body.
public struct OTLPDecodedSpan: Sendable {
    public var traceID = ""
    public var spanID = ""
    public var parentSpanID = ""
    public var traceState = ""
    public var name = ""
    public var kind = 0
    public var start: UInt64 = 0
    public var end: UInt64 = 0
    public var attributes: [String: String] = [:]
    public var statusCode = 0
    public var flags: UInt32 = 0
    /// Linked spans' ids, as `traceid/spanid`.
    public var links: [String] = []
}

/// Reads the parts of an `ExportTraceServiceRequest` the tests check, with a protobuf reader of its own (so that
/// the encoder is checked against an independent reading, by field numbers).
public enum OTLPDecoded {
    public struct Malformed: Error {}

    /// Every span of every resource and scope.
    public static func spans(in body: [UInt8]) throws -> [OTLPDecodedSpan] {
        var spans: [OTLPDecodedSpan] = []
        for (field, resourceSpans) in try fields(body) where field.number == 1 {
            for (scopeField, scopeSpans) in try fields(resourceSpans.bytes) where scopeField.number == 2 {
                for (spanField, span) in try fields(scopeSpans.bytes) where spanField.number == 2 {
                    spans.append(try decodeSpan(span.bytes))
                }
            }
        }
        return spans
    }

    /// The first resource's attributes, values as text.
    public static func resource(in body: [UInt8]) throws -> [String: String] {
        for (field, resourceSpans) in try fields(body) where field.number == 1 {
            for (resourceField, resource) in try fields(resourceSpans.bytes) where resourceField.number == 1 {
                var attributes: [String: String] = [:]
                for (attributeField, pair) in try fields(resource.bytes) where attributeField.number == 1 {
                    let (key, value) = try keyValue(pair.bytes)
                    attributes[key] = value
                }
                return attributes
            }
        }
        return [:]
    }

    private static func decodeSpan(_ bytes: [UInt8]) throws -> OTLPDecodedSpan {
        var span = OTLPDecodedSpan()
        for (field, value) in try fields(bytes) {
            switch field.number {
            case 1: span.traceID = hex(value.bytes)
            case 2: span.spanID = hex(value.bytes)
            case 3: span.traceState = String(decoding: value.bytes, as: UTF8.self)
            case 4: span.parentSpanID = hex(value.bytes)
            case 5: span.name = String(decoding: value.bytes, as: UTF8.self)
            case 6: span.kind = Int(value.number)
            case 7: span.start = value.number
            case 8: span.end = value.number
            case 9:
                let (key, text) = try keyValue(value.bytes)
                span.attributes[key] = text
            case 13:
                var trace = ""
                var id = ""
                for (linkField, linkValue) in try fields(value.bytes) {
                    if linkField.number == 1 { trace = hex(linkValue.bytes) }
                    if linkField.number == 2 { id = hex(linkValue.bytes) }
                }
                span.links.append(trace + "/" + id)
            case 15:
                for (statusField, statusValue) in try fields(value.bytes) where statusField.number == 3 {
                    span.statusCode = Int(statusValue.number)
                }
            case 16: span.flags = UInt32(truncatingIfNeeded: value.number)
            default: break
            }
        }
        return span
    }

    /// A KeyValue with its AnyValue as text (strings as they are, numbers and bools printed).
    private static func keyValue(_ bytes: [UInt8]) throws -> (String, String) {
        var key = ""
        var text = ""
        for (field, value) in try fields(bytes) {
            if field.number == 1 { key = String(decoding: value.bytes, as: UTF8.self) }
            if field.number == 2 {
                for (anyField, anyValue) in try fields(value.bytes) {
                    switch anyField.number {
                    case 1: text = String(decoding: anyValue.bytes, as: UTF8.self)
                    case 2: text = anyValue.number == 0 ? "false" : "true"
                    case 3: text = String(Int64(bitPattern: anyValue.number))
                    case 4: text = String(Double(bitPattern: anyValue.number))
                    default: break
                    }
                }
            }
        }
        return (key, text)
    }

    struct Field { let number: Int; let wireType: Int }
    struct Value { var number: UInt64 = 0; var bytes: [UInt8] = [] }

    /// The top-level fields of a message, in order.
    static func fields(_ bytes: [UInt8]) throws -> [(Field, Value)] {
        var index = 0
        var result: [(Field, Value)] = []
        func varint() throws -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard index < bytes.count, shift < 64 else { throw Malformed() }
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
        }
        func fixed(_ count: Int) throws -> UInt64 {
            guard index + count <= bytes.count else { throw Malformed() }
            var value: UInt64 = 0
            for offset in 0..<count { value |= UInt64(bytes[index + offset]) << UInt64(8 * offset) }
            index += count
            return value
        }
        while index < bytes.count {
            let key = try varint()
            let field = Field(number: Int(key >> 3), wireType: Int(key & 7))
            var value = Value()
            switch field.wireType {
            case 0: value.number = try varint()
            case 1: value.number = try fixed(8)
            case 5: value.number = try fixed(4)
            case 2:
                let length = Int(try varint())
                guard length >= 0, index + length <= bytes.count else { throw Malformed() }
                value.bytes = Array(bytes[index..<(index + length)])
                index += length
            default: throw Malformed()
            }
            result.append((field, value))
        }
        return result
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }
}
