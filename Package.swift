// swift-tools-version:6.0
import PackageDescription

/// Settings shared by every Swift target.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
    name: "fbsessions",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "fbsessiond", targets: ["fbsessiond"]),
        // For Fuzz/ (libFuzzer harnesses, a separate package): the modules whose parsers read outside input.
        .library(
            name: "FBSessionsParsers",
            targets: ["FBSessionsCore", "FBSessionsAPI", "FBSessionsGraph", "FBSessionsStorage", "HTTPClient", "Crypto"]),
    ],
    targets: [
        // C libraries, through pkg-config. Only their wrapper module may import them (.ci/run checks).
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .target(name: "CCurlShims", dependencies: ["CCurl"]),
        .target(name: "CMallocShims"),

        // One thin wrapper per C library; no C or Unsafe type in their public API.
        .target(
            name: "HTTPServer", dependencies: ["CMicroHTTPD", "CMallocShims", "Support", "InlineExecutor"],
            swiftSettings: swiftSettings
        ),
        .target(name: "Postgres", dependencies: ["CLibPQ", "InlineExecutor", "Support"], swiftSettings: swiftSettings),
        .target(
            name: "HTTPClient", dependencies: ["CCurl", "CCurlShims", "InlineExecutor", "Support"],
            swiftSettings: swiftSettings
        ),
        .target(name: "Crypto", dependencies: ["CCrypto"], swiftSettings: swiftSettings),

        // Pure Swift helpers.
        .target(name: "Support", swiftSettings: swiftSettings),
        // The task executor that runs handler tasks on the thread that resumes them (see its type).
        .target(name: "InlineExecutor", swiftSettings: swiftSettings),
        .target(name: "LocalCluster", swiftSettings: swiftSettings),
        // OpenTelemetry traces: ids, W3C traceparent, samplers, spans, the export queue and OTLP's protobuf.
        .target(name: "Tracing", dependencies: ["Support"], swiftSettings: swiftSettings),
        // Meta's table of Graph API versions, as data: read by the service, its commands and the emulator.
        .target(name: "GraphVersions", swiftSettings: swiftSettings),

        // The service.
        .target(name: "FBSessionsCore", dependencies: ["Support", "Crypto", "GraphVersions", "Tracing"], swiftSettings: swiftSettings),
        .target(
            name: "FBSessionsStorage",
            dependencies: ["FBSessionsCore", "Postgres", "Support", "Crypto", "InlineExecutor", "Tracing"],
            swiftSettings: swiftSettings
        ),
        // API keys' rate limits: token buckets shared by the event loops (docs/performance.md, "Rate limits").
        .target(name: "RateLimiting", dependencies: ["FBSessionsCore", "HTTPServer", "Support"], swiftSettings: swiftSettings),
        .target(
            name: "FBSessionsAPI",
            dependencies: ["FBSessionsCore", "HTTPServer", "Crypto", "Support", "GraphVersions", "Tracing", "RateLimiting"],
            swiftSettings: swiftSettings
        ),
        // The answers the exact cache gives before the router (docs/architecture.md); nothing else depends on it
        // but the assembly.
        .target(
            name: "FBSessionsFastPath",
            dependencies: [
                "FBSessionsCore", "FBSessionsStorage", "FBSessionsAPI", "HTTPServer", "Postgres", "Support", "RateLimiting",
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FBSessionsGraph",
            dependencies: ["FBSessionsCore", "HTTPClient", "Crypto", "Support", "GraphVersions", "Tracing"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "GraphEmulator",
            dependencies: ["HTTPServer", "Crypto", "Support", "GraphVersions"],
            exclude: ["README.md"],
            swiftSettings: swiftSettings
        ),
        // The one assembly of the service, shared by `fbsessiond` and the test harnesses.
        .target(
            name: "FBSessionsService",
            dependencies: [
                "FBSessionsCore", "FBSessionsStorage", "FBSessionsAPI", "FBSessionsFastPath", "FBSessionsGraph", "HTTPServer",
                "HTTPClient", "Postgres", "Support", "GraphVersions", "Tracing", "RateLimiting",
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "fbsessiond",
            dependencies: [
                "FBSessionsCore", "FBSessionsStorage", "FBSessionsAPI", "FBSessionsGraph", "FBSessionsService",
                "GraphEmulator", "HTTPServer", "HTTPClient", "Postgres", "Crypto", "Support", "LocalCluster", "GraphVersions",
            ],
            swiftSettings: swiftSettings
        ),

        // Test helpers shared by the test targets.
        .target(
            name: "TestSupport",
            dependencies: [
                "Postgres", "LocalCluster", "HTTPServer", "HTTPClient", "Support", "FBSessionsStorage", "FBSessionsService",
                "GraphEmulator", "InlineExecutor", "Tracing",
            ],
            swiftSettings: swiftSettings
        ),

        .testTarget(name: "SupportTests", dependencies: ["Support"], swiftSettings: swiftSettings),
        .testTarget(name: "TracingTests", dependencies: ["Tracing", "Support", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "GraphVersionsTests", dependencies: ["GraphVersions"], swiftSettings: swiftSettings),
        .testTarget(name: "CryptoTests", dependencies: ["Crypto"], swiftSettings: swiftSettings),
        .testTarget(
            name: "PostgresTests", dependencies: ["Postgres", "TestSupport", "LocalCluster", "Support"],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "LocalClusterTests", dependencies: ["LocalCluster"], swiftSettings: swiftSettings),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: ["HTTPServer", "HTTPClient", "TestSupport", "InlineExecutor", "Support"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HTTPClientTests",
            dependencies: ["HTTPClient", "HTTPServer", "TestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "GraphEmulatorTests",
            dependencies: ["GraphEmulator", "HTTPServer", "HTTPClient", "Crypto", "TestSupport", "GraphVersions"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FBSessionsGraphTests",
            dependencies: [
                "FBSessionsGraph", "FBSessionsCore", "GraphEmulator", "HTTPClient", "HTTPServer", "TestSupport", "Support",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FBSessionsEventsTests",
            dependencies: [
                "FBSessionsCore", "FBSessionsStorage", "FBSessionsAPI", "FBSessionsGraph", "FBSessionsService", "HTTPServer",
                "HTTPClient", "Postgres", "Crypto", "Support", "TestSupport", "fbsessiond", "GraphVersions", "Tracing",
            ],
            swiftSettings: swiftSettings
        ),
        // The service's tests, by the module they test. The in-memory ports and the spec reader they share are in
        // TestSupport; every test that drives the whole service over a real database (SessionHarness and the
        // harnesses built on it) is in the service tests.
        .testTarget(
            name: "FBSessionsFastPathTests",
            dependencies: ["FBSessionsFastPath", "FBSessionsCore"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FBSessionsCoreTests",
            dependencies: ["FBSessionsCore", "FBSessionsAPI", "Crypto", "TestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FBSessionsAPITests",
            dependencies: [
                "FBSessionsAPI", "FBSessionsCore", "FBSessionsGraph", "FBSessionsStorage", "FBSessionsService", "HTTPServer",
                "HTTPClient", "Crypto", "Support", "TestSupport", "RateLimiting",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FBSessionsStorageTests",
            dependencies: ["FBSessionsStorage", "FBSessionsCore", "Postgres", "Crypto", "TestSupport", "LocalCluster"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FBSessionsServiceTests",
            dependencies: [
                "FBSessionsCore", "FBSessionsStorage", "FBSessionsAPI", "FBSessionsGraph", "FBSessionsService", "HTTPServer",
                "HTTPClient", "Postgres", "Crypto", "Support", "TestSupport", "LocalCluster", "GraphVersions",
                "GraphEmulator", "FBSessionsFastPath", "Tracing",
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
