import Foundation
import Support

/// Sends a batch of finished spans somewhere. Called on the processor's own thread, one batch at a time; may block
/// up to `timeout` seconds. Returns true when the spans were accepted.
public protocol SpanExporter: Sendable {
    func export(_ spans: [SpanData], timeout: Double) -> Bool
}

/// Keeps exported spans in memory, for tests.
public final class InMemorySpanExporter: SpanExporter {
    private let stored = Locked<[SpanData]>([])

    /// An empty exporter.
    public init() {}

    public func export(_ spans: [SpanData], timeout: Double) -> Bool {
        stored.withLock { $0.append(contentsOf: spans) }
        return true
    }

    /// Every span exported so far.
    public var spans: [SpanData] { stored.withLock { $0 } }
}

/// OTLP/HTTP with binary protobuf (https://opentelemetry.io/docs/specs/otlp/#otlphttp): each batch is one POST of
/// an `ExportTraceServiceRequest` (``OTLPTraceEncoder``) with `Content-Type: application/x-protobuf`.
///
/// The POST itself is given (`post`, over the service's HTTP client), so that this module stays free of transports.
/// A 2xx answer is success; 429, 502, 503 and 504 are retried with a short backoff while the batch's time lasts
/// (the OTLP specification's retryable codes); anything else, a transport failure or the time running out drops the
/// batch.
public final class OTLPHTTPExporter: SpanExporter {
    /// Sends one body; returns the HTTP status, or nil when no answer came (refused, reset, timed out).
    public typealias Post = @Sendable (_ body: [UInt8], _ timeout: Double) async -> Int?

    private let encoder: OTLPTraceEncoder
    private let post: Post
    private let requestTimeout: Double

    /// An exporter that encodes with `encoder` and sends with `post`, each POST within `requestTimeout` seconds
    /// (`OTEL_EXPORTER_OTLP_TIMEOUT`).
    public init(encoder: OTLPTraceEncoder, requestTimeout: Double, post: @escaping Post) {
        self.encoder = encoder
        self.post = post
        self.requestTimeout = requestTimeout
    }

    public func export(_ spans: [SpanData], timeout: Double) -> Bool {
        let body = encoder.encode(spans)
        let deadline = Date(timeIntervalSinceNow: timeout)
        var backoff = 0.1
        while true {
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { return false }
            let status = send(body, timeout: min(requestTimeout, remaining))
            guard let status else { return false }
            if (200..<300).contains(status) { return true }
            guard [429, 502, 503, 504].contains(status), deadline.timeIntervalSinceNow > backoff else { return false }
            Thread.sleep(forTimeInterval: backoff)
            backoff = min(backoff * 2, 2)
        }
    }

    /// One POST, waited for on this (the export) thread for at most `timeout` seconds.
    private func send(_ body: [UInt8], timeout: Double) -> Int? {
        let answer = Locked<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        let post = self.post
        Task {
            let status = await post(body, timeout)
            answer.withLock { $0 = status }
            done.signal()
        }
        guard done.wait(timeout: .now() + timeout + 0.5) == .success else { return nil }
        return answer.withLock { $0 }
    }
}
