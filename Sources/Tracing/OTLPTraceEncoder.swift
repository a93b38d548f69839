import Foundation

/// Writes an OTLP `ExportTraceServiceRequest` in binary protobuf, by hand (docs/operations.md, "Traces", says why).
///
/// Field numbers, from opentelemetry-proto (`opentelemetry/proto/collector/trace/v1/trace_service.proto`,
/// `trace/v1/trace.proto`, `common/v1/common.proto`, `resource/v1/resource.proto`):
///
/// - ExportTraceServiceRequest: resource_spans 1.
/// - ResourceSpans: resource 1, scope_spans 2. Resource: attributes 1.
/// - ScopeSpans: scope 1, spans 2. InstrumentationScope: name 1, version 2.
/// - Span: trace_id 1, span_id 2, trace_state 3, parent_span_id 4, name 5, kind 6, start_time_unix_nano 7
///   (fixed64), end_time_unix_nano 8 (fixed64), attributes 9, links 13, status 15, flags 16 (fixed32).
/// - Span.Link: trace_id 1, span_id 2, trace_state 3, flags 6 (fixed32). Status: message 2, code 3.
/// - KeyValue: key 1, value 2. AnyValue: string_value 1, bool_value 2, int_value 3, double_value 4 (fixed64).
public struct OTLPTraceEncoder: Sendable {
    /// The resource's attributes, in order.
    public let resource: [(String, AttributeValue)]
    /// The instrumentation scope's name.
    public let scopeName: String

    /// An encoder for this resource and scope.
    public init(resource: [(String, AttributeValue)], scopeName: String = "fbsessiond") {
        self.resource = resource
        self.scopeName = scopeName
    }

    /// The resource of a process configured by `configuration`: `service.name`, a random `service.instance.id`,
    /// `service.version` when given, the SDK's name and language, then `OTEL_RESOURCE_ATTRIBUTES` (which cannot
    /// override `service.name`: `OTEL_SERVICE_NAME` wins, as the SDK specification says).
    public static func resource(_ configuration: TracingConfiguration, version: String?) -> [(String, AttributeValue)] {
        var attributes: [(String, AttributeValue)] = [
            ("service.name", .string(configuration.serviceName)),
            ("service.instance.id", .string(UUID().uuidString.lowercased())),
        ]
        if let version { attributes.append(("service.version", .string(version))) }
        attributes.append(("telemetry.sdk.name", .string("fbsessiond-tracing")))
        attributes.append(("telemetry.sdk.language", .string("swift")))
        for (key, value) in configuration.resourceAttributes where !attributes.contains(where: { $0.0 == key }) {
            attributes.append((key, .string(value)))
        }
        return attributes
    }

    /// The request body for `spans`.
    public func encode(_ spans: [SpanData]) -> [UInt8] {
        var writer = ProtobufWriter()
        writer.messageField(1) { resourceSpans in
            resourceSpans.messageField(1) { resource in
                for (key, value) in self.resource { Self.keyValue(&resource, 1, key, value) }
            }
            resourceSpans.messageField(2) { scopeSpans in
                scopeSpans.messageField(1) { scope in scope.stringField(1, scopeName) }
                for span in spans {
                    scopeSpans.messageField(2) { Self.span(&$0, span) }
                }
            }
        }
        return writer.bytes
    }

    private static func span(_ writer: inout ProtobufWriter, _ span: SpanData) {
        writer.bytesField(1, span.context.traceID.bytes)
        writer.bytesField(2, span.context.spanID.bytes)
        if let state = span.context.traceState { writer.stringField(3, state) }
        if let parent = span.parentSpanID { writer.bytesField(4, parent.bytes) }
        writer.stringField(5, span.name)
        writer.varintField(6, UInt64(span.kind.rawValue))
        writer.fixed64Field(7, span.start)
        writer.fixed64Field(8, span.end)
        for (key, value) in span.attributes { keyValue(&writer, 9, key, value) }
        for link in span.links {
            writer.messageField(13) { linkWriter in
                linkWriter.bytesField(1, link.traceID.bytes)
                linkWriter.bytesField(2, link.spanID.bytes)
                if let state = link.traceState { linkWriter.stringField(3, state) }
                linkWriter.fixed32Field(6, UInt32(link.flags) | 0x100 | (link.isRemote ? 0x200 : 0))
            }
        }
        if span.status != .unset {
            writer.messageField(15) { status in
                if let message = span.statusMessage { status.stringField(2, message) }
                status.varintField(3, UInt64(span.status.rawValue))
            }
        }
        // Trace flags in the low byte; bit 8 says whether the parent's remoteness is known, bit 9 that it was remote.
        let remote: UInt32 = span.parentSpanID == nil ? 0 : (span.kind == .server ? 0x300 : 0x100)
        writer.fixed32Field(16, UInt32(span.context.flags) | remote)
    }

    private static func keyValue(_ writer: inout ProtobufWriter, _ field: Int, _ key: String, _ value: AttributeValue) {
        writer.messageField(field) { pair in
            pair.stringField(1, key)
            pair.messageField(2) { any in
                switch value {
                case .string(let text):
                    any.tag(1, .lengthDelimited)
                    any.varint(UInt64(text.utf8.count))
                    any.raw(Array(text.utf8))
                case .bool(let flag):
                    any.tag(2, .varint)
                    any.varint(flag ? 1 : 0)
                case .int(let number):
                    any.tag(3, .varint)
                    any.varint(UInt64(bitPattern: Int64(number)))
                case .double(let number):
                    any.fixed64Field(4, number.bitPattern)
                }
            }
        }
    }
}
