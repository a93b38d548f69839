import FBSessionsCore
import Foundation
import GraphEmulator
import Support
import Testing
import TestSupport

/// Picture URLs and CDN answers the service must refuse: hosts, schemes, redirects, sizes, types, slowness.
@Suite(.enabled(if: TestDatabase.isEnabled)) struct PictureSafetyTests {
    @Test func aHostOffTheListIsRefusedWithoutAFetch() async throws {
        let harness = try await PictureHarness(.init(hosts: ["fbcdn.net", "fbsbx.com"]))
        defer { harness.stop() }
        let (_, session) = try await harness.loggedIn()
        let reply = try await harness.picture(session)
        #expect(reply.status == 502 && reply.errorCode == "picture_refused")
        #expect((reply.json["error"] as? [String: Any])?["reason"] as? String == "host")
        #expect(harness.emulator.callCount(.picture) == 1 && harness.emulator.callCount(.cdn) == 0)
        #expect(try await harness.picture(session, "redirect=false").errorCode == "picture_refused")
    }

    @Test func plainHTTPIsRefusedInProductionMode() async throws {
        let harness = try await PictureHarness(.init(allowHTTP: false))
        defer { harness.stop() }
        let (_, session) = try await harness.loggedIn()
        let reply = try await harness.picture(session)
        #expect(reply.status == 502 && (reply.json["error"] as? [String: Any])?["reason"] as? String == "scheme")
        #expect(harness.emulator.callCount(.cdn) == 0)
    }

    @Test func hostileCDNAnswersAreRefusedOrCut() async throws {
        let cdn = ScriptedCDN()
        let peer = try ScriptedPeer { request in cdn.answer(request) }
        defer { peer.stop() }
        let harness = try await PictureHarness(.init(cdnBaseURL: peer.baseURL, maxBytes: 4096, fetchTimeout: 0.5))
        defer { harness.stop() }
        let (_, session) = try await harness.loggedIn()

        func expectRefusal(_ mode: ScriptedCDN.Mode, _ reason: String, requests: Int) async throws {
            cdn.mode = mode
            let before = peer.requestCount
            let reply = try await harness.picture(session)
            #expect(reply.status == 502 && reply.errorCode == "picture_refused", "\(mode)")
            #expect((reply.json["error"] as? [String: Any])?["reason"] as? String == reason, "\(mode)")
            #expect(peer.requestCount - before == requests, "\(mode)")
        }
        try await expectRefusal(.redirectElsewhere, "redirect", requests: 1)
        try await expectRefusal(.redirectToHTTPS, "redirect", requests: 1)
        try await expectRefusal(.redirectLoop, "redirect", requests: 4)
        try await expectRefusal(.oversized, "too_large", requests: 1)
        try await expectRefusal(.oversizedChunked, "too_large", requests: 1)
        try await expectRefusal(.html, "content_type", requests: 1)
        try await expectRefusal(.svg, "content_type", requests: 1)
        try await expectRefusal(.htmlCalledPNG, "not_an_image", requests: 1)
        try await expectRefusal(.jpegCalledPNG, "not_an_image", requests: 1)

        cdn.mode = .slow
        let started = ContinuousClock.now
        let slow = try await harness.picture(session)
        #expect(slow.status == 503 && slow.errorCode == "picture_unavailable")
        #expect((slow.json["error"] as? [String: Any])?["reason"] as? String == "timeout")
        #expect(ContinuousClock.now - started < .seconds(3))
        cdn.mode = .truncated
        #expect(try await harness.picture(session).errorCode == "picture_unavailable")
        #expect(try await harness.rows("SELECT count(*) AS n FROM picture_cache").first?.decode("n", as: Int.self) == 0)

        // A redirect within the allowed hosts is followed, and the picture served with its own type.
        cdn.mode = .redirectHere
        let followed = try await harness.picture(session)
        #expect(followed.status == 200 && followed.header("Content-Type") == "image/gif")
        #expect(followed.body == ScriptedCDN.gif)
    }
}

/// A CDN that misbehaves as told, for ``PictureSafetyTests``.
final class ScriptedCDN: Sendable {
    enum Mode {
        case redirectElsewhere, redirectToHTTPS, redirectLoop, redirectHere, oversized, oversizedChunked, html, svg
        case htmlCalledPNG, jpegCalledPNG, slow, truncated
    }

    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 7, count: 100_000)
    static let gif: [UInt8] = Array("GIF89a".utf8) + [UInt8](repeating: 1, count: 40)

    private let current = Locked(Mode.html)

    var mode: Mode {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }

    func answer(_ request: PeerRequest) -> PeerAction {
        if request.path.hasPrefix("/moved.gif") {
            return .respond(status: 200, headers: [("Content-Type", "image/gif")], body: Self.gif)
        }
        switch mode {
        case .redirectElsewhere: return .redirect(to: "http://127.0.0.2:9/stolen.png")
        case .redirectToHTTPS: return .redirect(to: "https://example.com/a.png")
        case .redirectLoop: return .redirect(to: request.path)
        case .redirectHere: return .redirect(to: "/moved.gif?x=1")
        case .oversized: return .respond(status: 200, headers: [("Content-Type", "image/png")], body: Self.png)
        case .oversizedChunked:
            return .respondChunked(status: 200, headers: [("Content-Type", "image/png")], body: Self.png)
        case .html: return .respond(status: 200, headers: [("Content-Type", "text/html")], body: Array("<html>".utf8))
        case .svg:
            return .respond(status: 200, headers: [("Content-Type", "image/svg+xml")], body: Array("<svg/>".utf8))
        case .htmlCalledPNG:
            return .respond(status: 200, headers: [("Content-Type", "image/png")], body: Array("<html>".utf8))
        case .jpegCalledPNG:
            return .respond(status: 200, headers: [("Content-Type", "image/png")], body: [0xFF, 0xD8, 0xFF, 0xE0, 1, 2])
        case .slow:
            return .delayThenRespond(
                seconds: 5, status: 200, headers: [("Content-Type", "image/png")], body: Array(Self.png.prefix(64)))
        case .truncated: return .partialBody(declaredLength: 2000, sent: Array(Self.png.prefix(100)))
        }
    }
}
