import Support

/// Tracing's settings, read from the OpenTelemetry SDK's standard variables
/// (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/ and the OTLP exporter's,
/// https://opentelemetry.io/docs/specs/otel/protocol/exporter/). Tracing is off unless an endpoint is set.
public struct TracingConfiguration: Sendable {
    /// Where spans are POSTed: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as is, or `OTEL_EXPORTER_OTLP_ENDPOINT` +
    /// `/v1/traces`.
    public var endpoint: String
    /// Extra request headers (`OTEL_EXPORTER_OTLP_HEADERS`, or the traces-only variable): secrets, never logged.
    public var headers: [(String, String)]
    /// Seconds one export POST may take (`OTEL_EXPORTER_OTLP_TIMEOUT`, milliseconds; default 10 s).
    public var exportTimeout: Double
    /// `service.name` (`OTEL_SERVICE_NAME`, default `fbsessiond`).
    public var serviceName: String
    /// `OTEL_RESOURCE_ATTRIBUTES`, in order.
    public var resourceAttributes: [(String, String)]
    /// `OTEL_TRACES_SAMPLER` with `OTEL_TRACES_SAMPLER_ARG`.
    public var sampler: Sampler
    /// Seconds between exports (`OTEL_BSP_SCHEDULE_DELAY`, ms, default 5000).
    public var scheduleDelay: Double
    /// Seconds a whole export may take, retries included (`OTEL_BSP_EXPORT_TIMEOUT`, ms, default 30000).
    public var batchExportTimeout: Double
    /// Most spans waiting (`OTEL_BSP_MAX_QUEUE_SIZE`, default 2048); beyond, spans are dropped and counted.
    public var maxQueueSize: Int
    /// Most spans per POST (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`, default 512).
    public var maxExportBatchSize: Int

    /// A configuration with the defaults and `endpoint`.
    public init(endpoint: String) {
        self.endpoint = endpoint
        headers = []
        exportTimeout = 10
        serviceName = "fbsessiond"
        resourceAttributes = []
        sampler = .parentBased(root: .alwaysOn)
        scheduleDelay = 5
        batchExportTimeout = 30
        maxQueueSize = 2048
        maxExportBatchSize = 512
    }

    /// The variables read, with their defaults and meaning, for `--help`, the README and the env example.
    public static let documented: [(name: String, defaultValue: String, meaning: String)] = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "", "OTLP/HTTP base URL; spans go to it + /v1/traces (unset, with the next unset: tracing off)"),
        ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "", "full OTLP/HTTP URL for spans, used as is (wins over the base URL)"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf", "only http/protobuf is accepted (also ..._TRACES_PROTOCOL)"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "", "k=v,k2=v2 (percent-decoded) sent with every export; secret, never logged"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "10000", "milliseconds one export POST may take (also ..._TRACES_TIMEOUT)"),
        ("OTEL_SERVICE_NAME", "fbsessiond", "the resource's service.name"),
        ("OTEL_RESOURCE_ATTRIBUTES", "", "k=v,k2=v2 (percent-decoded) added to the resource"),
        ("OTEL_TRACES_SAMPLER", "parentbased_always_on", "always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio"),
        ("OTEL_TRACES_SAMPLER_ARG", "1.0", "the ratio of the ratio samplers, 0 to 1"),
        ("OTEL_BSP_SCHEDULE_DELAY", "5000", "milliseconds between exports"),
        ("OTEL_BSP_EXPORT_TIMEOUT", "30000", "milliseconds one export may take, retries included"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "2048", "spans kept waiting for export; more are dropped and counted"),
        ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "512", "most spans in one export"),
        ("OTEL_SDK_DISABLED", "false", "true turns tracing off whatever else is set"),
    ]

    /// Reads the variables: nil when tracing is off (no endpoint, or `OTEL_SDK_DISABLED=true`); problems go to
    /// `reader`, one line each naming the variable and never quoting a header's value.
    public static func parse(_ reader: inout EnvironmentReader) -> TracingConfiguration? {
        if let disabled = reader.optionalString("OTEL_SDK_DISABLED") {
            switch disabled.trimmingSpaces.lowercased() {
            case "true": return nil
            case "false": break
            default: reader.problem("OTEL_SDK_DISABLED: expected true or false")
            }
        }
        for name in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let protocolName = reader.optionalString(name), protocolName.trimmingSpaces != "http/protobuf" {
                reader.problem("\(name): only http/protobuf is supported (grpc and http/json are not)")
            }
        }
        let endpoint: String
        let endpointVariable: String
        if let traces = reader.optionalString("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            endpoint = traces.trimmingSpaces
            endpointVariable = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
        } else if let base = reader.optionalString("OTEL_EXPORTER_OTLP_ENDPOINT") {
            var trimmed = base.trimmingSpaces
            while trimmed.hasSuffix("/") { trimmed.removeLast() }
            endpoint = trimmed + "/v1/traces"
            endpointVariable = "OTEL_EXPORTER_OTLP_ENDPOINT"
        } else {
            // Off: still check the other variables, so that a mistake shows before the endpoint is added.
            var scratch = TracingConfiguration(endpoint: "")
            scratch.readRest(&reader)
            return nil
        }
        if !(endpoint.hasPrefix("http://") || endpoint.hasPrefix("https://")) || endpoint.hasControlCharactersOrSpaces {
            reader.problem("\(endpointVariable): expected an http(s) URL")
        }
        var configuration = TracingConfiguration(endpoint: endpoint)
        configuration.readRest(&reader)
        return configuration
    }

    private mutating func readRest(_ reader: inout EnvironmentReader) {
        let headerVariable =
            reader.optionalString("OTEL_EXPORTER_OTLP_TRACES_HEADERS") != nil
            ? "OTEL_EXPORTER_OTLP_TRACES_HEADERS" : "OTEL_EXPORTER_OTLP_HEADERS"
        if let text = reader.optionalString(headerVariable) {
            if let pairs = Self.pairs(text) {
                headers = pairs
            } else {
                reader.problem("\(headerVariable): expected key=value pairs separated by commas, percent-encoded")
            }
        }
        let timeoutVariable =
            reader.optionalString("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") != nil
            ? "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT" : "OTEL_EXPORTER_OTLP_TIMEOUT"
        exportTimeout = Double(reader.integer(timeoutVariable, default: 10_000, in: 1...600_000)) / 1000
        serviceName = reader.string("OTEL_SERVICE_NAME", default: "fbsessiond")
        if serviceName.isEmpty || serviceName.hasControlCharacters {
            reader.problem("OTEL_SERVICE_NAME: expected a name without control characters")
        }
        if let text = reader.optionalString("OTEL_RESOURCE_ATTRIBUTES") {
            if let pairs = Self.pairs(text) {
                resourceAttributes = pairs
            } else {
                reader.problem("OTEL_RESOURCE_ATTRIBUTES: expected key=value pairs separated by commas, percent-encoded")
            }
        }
        var ratio = 1.0
        if let text = reader.optionalString("OTEL_TRACES_SAMPLER_ARG") {
            if let value = Double(text.trimmingSpaces), value.isFinite, (0...1).contains(value) {
                ratio = value
            } else {
                reader.problem("OTEL_TRACES_SAMPLER_ARG: expected a ratio from 0 to 1")
            }
        }
        let samplerName = reader.string("OTEL_TRACES_SAMPLER", default: "parentbased_always_on").trimmingSpaces.lowercased()
        if let named = Sampler.named(samplerName, ratio: ratio) {
            sampler = named
        } else {
            reader.problem(
                "OTEL_TRACES_SAMPLER: expected always_on, always_off, traceidratio, parentbased_always_on, "
                    + "parentbased_always_off or parentbased_traceidratio")
        }
        scheduleDelay = Double(reader.integer("OTEL_BSP_SCHEDULE_DELAY", default: 5000, in: 1...3_600_000)) / 1000
        batchExportTimeout = Double(reader.integer("OTEL_BSP_EXPORT_TIMEOUT", default: 30_000, in: 1...3_600_000)) / 1000
        maxQueueSize = reader.integer("OTEL_BSP_MAX_QUEUE_SIZE", default: 2048, in: 1...1_000_000)
        maxExportBatchSize = reader.integer("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", default: 512, in: 1...1_000_000)
        if maxExportBatchSize > maxQueueSize {
            reader.problem("OTEL_BSP_MAX_EXPORT_BATCH_SIZE: must not exceed OTEL_BSP_MAX_QUEUE_SIZE")
        }
    }

    /// `k=v,k2=v2` with percent-decoded keys and values (the W3C Baggage shape the SDK variables use), or nil when
    /// a member has no `=`, an empty key, a bad percent escape, or a control character once decoded (a header
    /// value must not carry a line break into the export's request).
    static func pairs(_ text: String) -> [(String, String)]? {
        var result: [(String, String)] = []
        for member in text.split(separator: ",", omittingEmptySubsequences: true) {
            guard let equals = member.firstIndex(of: "=") else { return nil }
            guard let key = percentDecoded(String(member[..<equals]).trimmingSpaces),
                let value = percentDecoded(String(member[member.index(after: equals)...]).trimmingSpaces), !key.isEmpty,
                !key.hasControlCharacters, !value.hasControlCharacters
            else { return nil }
            result.append((key, value))
        }
        return result
    }

    static func percentDecoded(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension String {
    /// Whether a byte below 0x20 or 0x7F is in it.
    var hasControlCharacters: Bool { utf8.contains { $0 < 0x20 || $0 == 0x7F } }

    /// Whether a control character or a space is in it (never in a URL).
    var hasControlCharactersOrSpaces: Bool { hasControlCharacters || utf8.contains(0x20) }

    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view.removeFirst() }
        while let last = view.last, last == " " || last == "\t" { view.removeLast() }
        return String(view)
    }
}
