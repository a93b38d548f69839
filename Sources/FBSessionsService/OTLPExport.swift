import Foundation
import HTTPClient
import Support
import Tracing

/// The tracer of a service whose settings turn tracing on: spans go to `OTEL_EXPORTER_OTLP_…` over the service's
/// HTTP client (libcurl), or to `exporter` when a test gives one.
enum OTLPExport {
    /// The tracer and the client it posts with (the caller shuts the client down after the tracer), or nil when
    /// tracing is off.
    static func tracer(
        _ configuration: TracingConfiguration?, exporter: (any SpanExporter)?, counters: TracingCounters
    ) throws -> (Tracer, Client?)? {
        guard let configuration else { return nil }
        if let exporter {
            return (Tracer(configuration: configuration, exporter: exporter, counters: counters), nil)
        }
        let client = try Client(
            configuration: .init(
                timeout: .milliseconds(Int64(configuration.exportTimeout * 1000)),
                connectTimeout: .milliseconds(Int64(min(configuration.exportTimeout, 5) * 1000)),
                maxResponseBytes: 64 * 1024))
        let encoder = OTLPTraceEncoder(resource: OTLPTraceEncoder.resource(configuration, version: nil))
        let url = configuration.endpoint
        // The configured headers (an API key, often) go on the request and nowhere else: not in a log, not in an error.
        let headers = [("Content-Type", "application/x-protobuf")] + configuration.headers
        let exporter = OTLPHTTPExporter(encoder: encoder, requestTimeout: configuration.exportTimeout) { body, timeout in
            let request = ClientRequest(
                method: "POST", url: url, headers: headers, body: body,
                timeout: .milliseconds(Int64(max(timeout, 0.001) * 1000)))
            return try? await client.execute(request).status
        }
        return (Tracer(configuration: configuration, exporter: exporter, counters: counters), client)
    }
}
