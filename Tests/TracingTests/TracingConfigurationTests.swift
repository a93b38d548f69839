import Support
import Testing

@testable import Tracing

@Suite struct TracingConfigurationTests {
    func parse(_ environment: [String: String]) -> (TracingConfiguration?, [String]) {
        var reader = EnvironmentReader(environment)
        let configuration = TracingConfiguration.parse(&reader)
        return (configuration, reader.problems)
    }

    @Test func offWithoutAnEndpoint() {
        let (configuration, problems) = parse([:])
        #expect(configuration == nil && problems.isEmpty)
    }

    @Test func offWhenTheSDKIsDisabled() {
        let (configuration, problems) = parse(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"])
        #expect(configuration == nil && problems.isEmpty)
    }

    @Test func theBaseEndpointGetsTheTracesPathAndTheTracesEndpointIsUsedAsIs() throws {
        let base = try #require(parse(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318/"]).0)
        #expect(base.endpoint == "http://127.0.0.1:4318/v1/traces")
        let full = try #require(
            parse([
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:9999/custom",
            ]).0)
        #expect(full.endpoint == "http://collector:9999/custom")
    }

    @Test func defaultsFollowTheSpecification() throws {
        let configuration = try #require(parse(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"]).0)
        #expect(configuration.serviceName == "fbsessiond")
        #expect(configuration.sampler == .parentBased(root: .alwaysOn))
        #expect(configuration.exportTimeout == 10 && configuration.scheduleDelay == 5)
        #expect(configuration.batchExportTimeout == 30)
        #expect(configuration.maxQueueSize == 2048 && configuration.maxExportBatchSize == 512)
    }

    @Test func readsEveryVariable() throws {
        let configuration = try #require(
            parse([
                "OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=a%2Cb%3Dc, x=y",
                "OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_SERVICE_NAME": "sessions-eu",
                "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,region=eu%20west",
                "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.01",
                "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_BSP_EXPORT_TIMEOUT": "1000", "OTEL_BSP_MAX_QUEUE_SIZE": "64",
                "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "16", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            ]).0)
        #expect(configuration.headers.map { "\($0.0)=\($0.1)" } == ["api-key=a,b=c", "x=y"])
        #expect(configuration.exportTimeout == 2.5)
        #expect(configuration.serviceName == "sessions-eu")
        #expect(configuration.resourceAttributes.map { "\($0.0)=\($0.1)" } == ["deployment.environment=prod", "region=eu west"])
        #expect(configuration.sampler == .parentBased(root: .traceIDRatio(0.01)))
        #expect(configuration.scheduleDelay == 0.1 && configuration.batchExportTimeout == 1)
        #expect(configuration.maxQueueSize == 64 && configuration.maxExportBatchSize == 16)
    }

    @Test func refusesBadValuesNamingTheVariableAndNeverAHeaderValue() {
        let (_, problems) = parse([
            "OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://collector", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_HEADERS": "secret-token-value", "OTEL_TRACES_SAMPLER": "sometimes",
            "OTEL_TRACES_SAMPLER_ARG": "2", "OTEL_BSP_MAX_QUEUE_SIZE": "0", "OTEL_EXPORTER_OTLP_TIMEOUT": "soon",
        ])
        let text = problems.joined(separator: "\n")
        for name in [
            "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_TRACES_SAMPLER:",
            "OTEL_TRACES_SAMPLER_ARG", "OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_EXPORTER_OTLP_TIMEOUT",
        ] {
            #expect(text.contains(name), "\(name) is named")
        }
        #expect(!text.contains("secret-token-value"))
        // Checked even while tracing is off, so that a mistake shows before the endpoint is set.
        #expect(!parse(["OTEL_TRACES_SAMPLER": "sometimes"]).1.isEmpty)
        #expect(!parse(["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"]).1.isEmpty)
    }

    @Test func refusesControlCharactersAndNamesTheEndpointVariableThatWasSet() {
        // A line break in a header would go into the export's request; in a service name, into every span.
        let broken = parse(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "a=b%0D%0AX-Evil: 1"])
        #expect(broken.1.contains { $0.hasPrefix("OTEL_EXPORTER_OTLP_HEADERS:") })
        #expect(!broken.1.joined().contains("Evil"))
        #expect(parse(["OTEL_RESOURCE_ATTRIBUTES": "k=v%01"]).1.contains { $0.hasPrefix("OTEL_RESOURCE_ATTRIBUTES:") })
        #expect(parse(["OTEL_SERVICE_NAME": "name\u{1}"]).1.contains { $0.hasPrefix("OTEL_SERVICE_NAME:") })
        #expect(parse(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://c ollector"]).1.first?.hasPrefix("OTEL_EXPORTER_OTLP_ENDPOINT:") == true)
        #expect(parse(["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "nope"]).1.first?.hasPrefix("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT:") == true)
        #expect(parse(["OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SERVICE_NAME": "checkout api"]).1.isEmpty)
    }
}
