import Foundation
import HTTPServer
@testable import Support
import Testing

@testable import FBSessionsAPI

/// The request log line written from the exchange record's fields is the line the dictionary gave: same keys,
/// same order, same values, so log consumers see no change.
@Suite struct RequestLogLineTests {
    @Test func fieldsWriteTheDictionaryLine() {
        let records = [
            ExchangeRecord(requestID: "0123abcd", method: "GET", route: "/healthz", status: 200, duration: 0.000123, outcome: .completed),
            ExchangeRecord(requestID: "r-1:x.y_z", method: "POST", route: "/v1/sessions", status: 503, duration: 2.5, outcome: .timedOut),
            ExchangeRecord(requestID: "-", method: "-", route: nil, status: nil, duration: 0, outcome: .aborted),
            ExchangeRecord(requestID: "id", method: "PR\"OP\\", route: "/v1/x", status: 404, duration: 1e-9, outcome: .shutdown),
            ExchangeRecord(requestID: "id", method: "GET", route: "/v1/x", status: 200, duration: 12_345.678_91, outcome: .completed),
        ]
        let time = Date(timeIntervalSince1970: 1_796_000_000.5)
        let prefix = LogRecord(time: time, level: .info, label: "http", message: "request", metadata: [:]).jsonLine.dropLast()
        for record in records {
            let fields = RequestLogFields(record: record, route: record.route ?? "unmatched")
            let line = prefix + (fields.jsonFieldsText() ?? "overflow") + "}"
            let expected = LogRecord(time: time, level: .info, label: "http", message: "request", metadata: fields.metadata)
            #expect(line == expected.jsonLine)
            #expect(fields.metadata.count == 6)
        }
    }

    /// A traced request's line has `span_id` and `trace_id` in their sorted places, the same both ways.
    @Test func aTracedRequestsFieldsWriteTheDictionaryLineWithItsIDs() {
        let record = ExchangeRecord(
            requestID: "r1", method: "POST", route: "/v1/sessions", status: 201, duration: 0.25, outcome: .completed)
        let time = Date(timeIntervalSince1970: 1_796_000_000.5)
        let prefix = LogRecord(time: time, level: .info, label: "http", message: "request", metadata: [:]).jsonLine.dropLast()
        let fields = RequestLogFields(
            record: record, route: "/v1/sessions", trace: ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"))
        let line = prefix + (fields.jsonFieldsText() ?? "overflow") + "}"
        let expected = LogRecord(time: time, level: .info, label: "http", message: "request", metadata: fields.metadata)
        #expect(line == expected.jsonLine)
        #expect(fields.metadata["trace_id"] == .string("4bf92f3577b34da6a3ce929d0e0e4736"))
        #expect(line.contains(#""span_id":"00f067aa0ba902b7","status":201,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"}"#))
    }
}
