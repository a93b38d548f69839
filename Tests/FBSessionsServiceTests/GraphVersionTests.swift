import FBSessionsCore
import FBSessionsStorage
import Foundation
import GraphEmulator
import GraphVersions
import Support
import TestSupport
import XCTest

/// Graph API versions end to end: an app's own version reaches every Graph call and its login dialog, the
/// `facebook-api-version` header of Facebook's answers (the emulator's, over HTTP) reaches `GET /v1/app` and the
/// metrics, a retired version is reported as Facebook serves it, and the warnings are logged.
final class GraphVersionTests: XCTestCase {
    private func day(_ text: String) throws -> CalendarDay { try XCTUnwrap(CalendarDay(text)) }

    private func appJSON(_ harness: SessionHarness) async throws -> [String: Any] {
        let reply = try await harness.call("GET", "/v1/app")
        XCTAssertEqual(reply.status, 200, reply.text)
        return reply.json
    }

    /// Waits until the service recorded a served version (the record is written by a task of its own).
    private func servedVersion(_ harness: SessionHarness) async throws -> [String: Any] {
        for _ in 0..<100 {
            let version = try await appJSON(harness)["graph_version"] as? [String: Any] ?? [:]
            if !(version["served"] is NSNull), version["served"] != nil { return version }
            try await Task.sleep(for: .milliseconds(50))
        }
        XCTFail("no served version was recorded")
        return [:]
    }

    func testTheDefaultIsCurrentAndIsWhatFacebookServes() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        XCTAssertEqual(harness.service.parts.settings.graphVersion, "v25.0")
        let before = try await appJSON(harness)
        let fresh = try XCTUnwrap(before["graph_version"] as? [String: Any])
        XCTAssertEqual(fresh["requested"] as? String, "v25.0")
        XCTAssertEqual(fresh["available_until"] as? String, "2028-07-29")
        XCTAssertTrue(fresh["served"] is NSNull && fresh["served_at"] is NSNull, "nothing served before any call")
        XCTAssertEqual((before["warnings"] as? [Any])?.count, 0)

        let (_, token) = try harness.userToken()
        let login = try await harness.login(owner: "ada", token: token)
        XCTAssertEqual(login.status, 201, login.text)
        let served = try await servedVersion(harness)
        XCTAssertEqual(served["served"] as? String, "v25.0")
        let servedAt = try XCTUnwrap(served["served_at"] as? String)
        XCTAssertTrue(servedAt.hasPrefix("20") && servedAt.hasSuffix("Z"), servedAt)
        let metrics = harness.service.metrics.render()
        XCTAssertTrue(
            metrics.contains(#"fbs_graph_version_served_total{app="shop",requested="v25.0",served="v25.0"}"#), metrics)
    }

    func testAnAppsOwnVersionReachesItsCallsAndItsLoginDialog() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        let updated = try await harness.service.apps.setGraphVersion("v22.0", ofAppNamed: "shop")
        XCTAssertEqual(updated.graphVersion, "v22.0")
        // Keys are not cached in this harness (FBS_KEY_CACHE_TTL=0): the next request sees the app as it now is.
        let (_, token) = try harness.userToken()
        let login = try await harness.login(owner: "ada", token: token)
        XCTAssertEqual(login.status, 201, login.text)
        let served = try await servedVersion(harness)
        XCTAssertEqual(served["requested"] as? String, "v22.0")
        XCTAssertEqual(served["served"] as? String, "v22.0", "the emulator answers the version in the path")
        XCTAssertEqual(served["available_until"] as? String, "2027-05-20")
        XCTAssertTrue(
            harness.service.metrics.render().contains(
                #"fbs_graph_version_served_total{app="shop",requested="v22.0",served="v22.0"}"#))

        let url = try await harness.call(
            "POST", "/v1/login-urls", json: ["owner": "ada", "redirect_uri": "https://shop.example/callback"])
        XCTAssertEqual(url.status, 201, url.text)
        XCTAssertTrue((url.json["url"] as? String ?? "").contains("/v22.0/dialog/oauth?"), url.text)

        // Back to the service default: a served version recorded for v22.0 says nothing about v25.0.
        _ = try await harness.service.apps.setGraphVersion(nil, ofAppNamed: "shop")
        let afterReset = try await appJSON(harness)
        let reset = try XCTUnwrap(afterReset["graph_version"] as? [String: Any])
        XCTAssertEqual(reset["requested"] as? String, "v25.0")
        XCTAssertTrue(reset["served"] is NSNull)
    }

    func testARetiredVersionIsReportedAsFacebookServesIt() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        _ = try await harness.service.apps.setGraphVersion("v21.0", ofAppNamed: "shop")
        // Facebook's clock past v21.0's last day (2027-01-21): its calls are answered by v22.0.
        harness.emulator.setClock(to: Int64(try day("2027-01-25").unixSeconds))
        let (_, token) = try harness.userToken()
        let login = try await harness.login(owner: "ada", token: token)
        XCTAssertEqual(login.status, 201, login.text)
        let served = try await servedVersion(harness)
        XCTAssertEqual(served["requested"] as? String, "v21.0")
        XCTAssertEqual(served["served"] as? String, "v22.0")

        let app = try await appJSON(harness)
        let warnings = try XCTUnwrap(app["warnings"] as? [[String: Any]])
        XCTAssertEqual(warnings.map { $0["code"] as? String }, ["graph_version_sunset", "graph_version_upgraded"])
        XCTAssertEqual(warnings[0]["available_until"] as? String, "2027-01-21")
        XCTAssertEqual(warnings[1]["requested"] as? String, "v21.0")
        XCTAssertEqual(warnings[1]["served"] as? String, "v22.0")
        XCTAssertTrue(
            harness.service.metrics.render().contains(
                #"fbs_graph_version_served_total{app="shop",requested="v21.0",served="v22.0"}"#))
    }

    func testWarningsAreLoggedAndTheDaysLeftAreMeasured() async throws {
        let harness = try await SessionHarness()
        defer { harness.stop() }
        _ = try await harness.service.apps.setGraphVersion("v21.0", ofAppNamed: "shop")
        let log = InMemoryLogHandler()
        let metrics = MetricsRegistry()
        let today = try day("2026-12-07")
        let watch = GraphVersionWatch(
            apps: harness.service.apps, defaultVersion: GraphVersionTable.defaultVersion, metrics: metrics,
            logger: Logger(label: "graph", handler: log), clock: { Date(timeIntervalSince1970: today.unixSeconds) })
        let written = await watch.logWarnings()
        XCTAssertEqual(written, 1)
        let record = try XCTUnwrap(log.records.first)
        XCTAssertEqual(record.level, .warning)
        XCTAssertEqual(record.message, "v21.0 is served until 2027-01-21 (45 days left); move the app to a newer version")
        XCTAssertEqual(record.metadata["code"], .string("graph_version_sunset"))
        XCTAssertEqual(record.metadata["app"], .string("shop"))
        XCTAssertTrue(metrics.render().contains(#"fbs_graph_version_days_left{app="shop"} 45"#), metrics.render())

        _ = try await harness.service.apps.setGraphVersion("v25.0", ofAppNamed: "shop")
        let none = await watch.logWarnings()
        XCTAssertEqual(none, 0, "no warning stands for a current version")
        XCTAssertTrue(metrics.render().contains(#"fbs_graph_version_days_left{app="shop"} 600"#), metrics.render())
    }

    func testTheSettingRefusesMalformedVersionsWithOneLine() throws {
        for bad in ["21", "v21", "latest"] {
            guard case .failure(let error) = Settings.parse(["FBS_GRAPH_VERSION": bad]) else {
                return XCTFail("\(bad) was accepted")
            }
            XCTAssertEqual(error.problems.count, 1)
            XCTAssertTrue(error.problems[0].hasPrefix("FBS_GRAPH_VERSION: \"\(bad)\" is not a Graph API version"))
        }
        guard case .success(let newer) = Settings.parse(["FBS_GRAPH_VERSION": "v27.0"]) else {
            return XCTFail("a version newer than the table was refused")
        }
        XCTAssertEqual(newer.graphVersion, "v27.0")
        XCTAssertEqual(newer.warnings.count, 1)
        guard case .success(let standard) = Settings.parse([:]) else { return XCTFail("the defaults were refused") }
        XCTAssertEqual(standard.graphVersion, "v25.0")
        XCTAssertEqual(standard.warnings, [])
    }
}
