import Foundation
import HTTPClient
import Testing

@testable import GraphEmulator

/// `/{id}/picture` and the CDN stand-in (docs/facebook-graph.md §5, §12.10).
@Suite("Pictures")
struct PictureTests {
    func fetch(_ harness: Harness, _ url: String) async throws -> Reply {
        Reply(try await harness.client.execute(ClientRequest(url: url)))
    }

    /// Width and height from a PNG's IHDR chunk.
    func dimensions(_ png: [UInt8]) -> (Int, Int) {
        func word(_ at: Int) -> Int { png[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        return (word(16), word(20))
    }

    @Test func redirectsToCDNBytes() async throws {
        let harness = try Harness()
        let reply = try await harness.send("GET", "/v25.0/\(harness.user.id)/picture?type=large")
        #expect(reply.status == 302)
        let location = try #require(reply.header("location"))
        let query = queryItems(location)
        #expect(location.hasPrefix(harness.base + "/__cdn/platform/profilepic/?asid=\(harness.user.id)&"))
        #expect(query.value("width") == "200" && query.value("height") == "200")
        let ext = try #require(query.value("ext").flatMap { Int64($0) })
        #expect(ext > harness.emulator.now)
        #expect(query.value("hash")?.hasPrefix("Ae") == true)

        let image = try await fetch(harness, location)
        #expect(image.status == 200)
        #expect(image.header("content-type") == "image/png")
        #expect(Array(image.body.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect(dimensions(image.body) == (200, 200))
        #expect(Array(image.body.suffix(8)) == [0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82])
        // Deterministic per user and size.
        let again = try await fetch(
            harness,
            try #require(try await harness.send("GET", "/\(harness.user.id)/picture?type=large").header("location")))
        #expect(again.body == image.body)
        let other = try harness.emulator.createUser(firstName: "Sam")
        let otherURL = try #require(try await harness.send("GET", "/\(other.id)/picture?type=large").header("location"))
        #expect(try await fetch(harness, otherURL).body != image.body)
    }

    @Test func jsonWithRedirectFalseAndSizes() async throws {
        let harness = try Harness()
        let token = try harness.token()
        let reply = try await harness.send("GET", "/me/picture?width=80&height=60&redirect=false&access_token=\(token)")
        #expect(reply.status == 200)
        let data = try #require(reply.json?["data"])
        #expect(data.objectValue?.map(\.0) == ["height", "is_silhouette", "url", "width"])
        #expect(data["width"]?.intValue == 80 && data["height"]?.intValue == 60)
        let image = try await fetch(harness, try #require(data["url"]?.stringValue))
        #expect(dimensions(image.body) == (80, 60))
        let fallback = try await harness.send("GET", "/\(harness.user.id)/picture?redirect=0")
        #expect(fallback.json?["data"]?["width"]?.intValue == 50)
        let bad = try await harness.send("GET", "/\(harness.user.id)/picture?type=huge")
        #expect(bad.status == 400)
        let anonymousMe = try await harness.send("GET", "/me/picture")
        #expect(anonymousMe.graphError?["code"]?.intValue == 2500)
        let nobody = try await harness.send("GET", "/4242/picture")
        #expect(nobody.graphError?["error_subcode"]?.intValue == 33)
    }

    @Test func silhouetteForUsersWithoutAPicture() async throws {
        let harness = try Harness()
        let faceless = try harness.emulator.createUser(firstName: "Kim", hasPicture: false)
        let reply = try await harness.send("GET", "/\(faceless.id)/picture?redirect=false&type=normal")
        let data = try #require(reply.json?["data"])
        #expect(data["is_silhouette"]?.boolValue == true)
        let url = try #require(data["url"]?.stringValue)
        #expect(url.contains("/__cdn/static/silhouette/"))
        let image = try await fetch(harness, url)
        #expect(image.status == 200 && dimensions(image.body) == (100, 100))
    }

    @Test func cdnURLsExpireAndAreSigned() async throws {
        let harness = try Harness()
        let location = try #require(try await harness.send("GET", "/\(harness.user.id)/picture").header("location"))
        let tampered = location.replacingOccurrences(of: "width=50", with: "width=51")
        let mismatch = try await fetch(harness, tampered)
        #expect(mismatch.status == 403 && mismatch.text == "URL signature mismatch")
        harness.emulator.advanceClock(by: 15 * 86400)
        let expired = try await fetch(harness, location)
        #expect(expired.status == 403)
        #expect(expired.text == "URL signature expired")
        #expect(harness.emulator.callCount(.cdn) == 2)
        #expect(harness.emulator.callCount(.picture) == 1)
    }
}
