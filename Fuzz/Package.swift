// swift-tools-version:6.0
// libFuzzer harnesses for every parser of outside input. A separate package so that the main package's
// `swift build`, `swift test` and CI's warnings-as-errors build never see them. Build and run: tools/fuzz/run.
//
// Each target is one fuzzer (its own LLVMFuzzerTestOneInput). They reach the parsers, most of them internal, with
// `@testable import`, so the build passes `-enable-testing` along with `-sanitize=fuzzer,address` and
// `-parse-as-library` (see tools/fuzz/run).
//
// Entry point: on Linux SwiftPM links every executable with `--defsym main=<Target>_main` (so tests can import
// executables), and `-parse-as-library` emits no such symbol, so the link fails (swiftlang/swift-package-manager
// #8731). Each fuzzer therefore defines `<Target>_main` itself and hands over to libFuzzer's
// `LLVMFuzzerRunDriver` (declared in CFuzzerDriver).
import PackageDescription

let fuzzers = [
    "FuzzRequestJSON", "FuzzPathQuery", "FuzzSignedRequest", "FuzzGraphResponses", "FuzzMigrationFiles", "FuzzLimitedLogin",
]

let package = Package(
    name: "fbsessions-fuzz",
    platforms: [.macOS(.v14)],
    dependencies: [.package(name: "fbsessions", path: "..")],
    targets: [.target(name: "CFuzzerDriver")] + fuzzers.map { name in
        .executableTarget(
            name: name,
            dependencies: ["CFuzzerDriver", .product(name: "FBSessionsParsers", package: "fbsessions")],
            path: "Sources/\(name)")
    }
)
