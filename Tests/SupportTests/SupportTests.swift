import Foundation
import Support
import Testing

@Suite struct LoggerTests {
    @Test func writesOneJSONLinePerRecordWithMetadata() throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "http", level: .info, handler: handler)
        logger[metadataKey: "instance"] = "a"
        logger.debug("dropped")
        logger.info("request", ["status": 200, "route": "/v1/x", "quote": .string("a\"b\n")])
        #expect(handler.records.count == 1)
        let line = try #require(handler.records.first).jsonLine
        #expect(!line.contains("\n"))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["msg"] as? String == "request")
        #expect(object["level"] as? String == "info")
        #expect(object["logger"] as? String == "http")
        #expect(object["status"] as? Int == 200)
        #expect(object["instance"] as? String == "a")
        #expect(object["quote"] as? String == "a\"b\n")
        #expect((object["time"] as? String)?.hasSuffix("Z") == true)
    }

    @Test func levelsParseAndOrder() {
        #expect(Logger.Level(name: "WARNING") == .warning)
        #expect(Logger.Level(name: "verbose") == nil)
        #expect(Logger.Level.debug < .error)
    }
}

@Suite struct MetricsTests {
    @Test func rendersPrometheusText() {
        let registry = MetricsRegistry()
        let counter = registry.counter("requests_total", help: "Requests.")
        counter.increment([("route", "/a"), ("status", "200")])
        counter.increment([("route", "/a"), ("status", "200")])
        counter.increment([("route", "/b\"x"), ("status", "500")])
        let histogram = registry.histogram("latency_seconds", help: "Latency.", buckets: [0.1, 1])
        histogram.observe(0.05, [("route", "/a")])
        histogram.observe(0.5, [("route", "/a")])
        histogram.observe(5, [("route", "/a")])
        registry.gauge("pool", help: "Pool.") { [([("state", "in_use")], 3)] }
        let text = registry.render()
        #expect(text.contains("# TYPE requests_total counter\n"))
        #expect(text.contains(#"requests_total{route="/a",status="200"} 2"#))
        #expect(text.contains(#"requests_total{route="/b\"x",status="500"} 1"#))
        #expect(text.contains(#"latency_seconds_bucket{route="/a",le="0.1"} 1"#))
        #expect(text.contains(#"latency_seconds_bucket{route="/a",le="1"} 2"#))
        #expect(text.contains(#"latency_seconds_bucket{route="/a",le="+Inf"} 3"#))
        #expect(text.contains(#"latency_seconds_count{route="/a"} 3"#))
        #expect(text.contains(#"pool{state="in_use"} 3"#))
    }
}

@Suite struct EnvironmentReaderTests {
    @Test func collectsEveryProblem() {
        var reader = EnvironmentReader(["A": "x", "B": "7", "C": "maybe", "D": "2.5"])
        #expect(reader.integer("A", default: 1, in: 0...10) == 1)
        #expect(reader.integer("B", default: 1, in: 0...10) == 7)
        #expect(reader.bool("C", default: true) == true)
        #expect(reader.seconds("D", default: 1, in: 0...10) == 2.5)
        #expect(reader.integer("MISSING", default: 4, in: 0...10) == 4)
        #expect(reader.problems.count == 2)
        #expect(reader.problems.allSatisfy { $0.hasPrefix("A:") || $0.hasPrefix("C:") })
    }

    @Test func rfc3339IsUTCWithMilliseconds() {
        #expect(RFC3339.string(from: Date(timeIntervalSince1970: 1_764_491_550.123)) == "2025-11-30T08:32:30.123Z")
    }
}

@Suite struct RFC3339Tests {
    @Test func matchesTheCalendarAcrossEraBoundaries() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        for seconds in [0.0, 951_782_400.5, 1_709_164_800.999, 4_102_444_800.001, -86_400.25, 253_402_300_799.0] {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(RFC3339.string(from: date) == formatter.string(from: date), "\(seconds)")
        }
    }
}
