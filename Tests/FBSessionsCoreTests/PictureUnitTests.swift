import FBSessionsCore
import Foundation
import Testing

/// The pure parts of pictures: the URL policy, magic numbers, ETags and the in-memory layer.
@Suite struct PictureUnitTests {
    let policy = PictureURLPolicy(hostSuffixes: ["fbcdn.net", ".FBSBX.com"], allowsHTTP: false)

    func refusal(_ text: String, _ policy: PictureURLPolicy? = nil) -> PictureRefusal? {
        do {
            _ = try (policy ?? self.policy).check(text)
            return nil
        } catch PictureError.refused(let rule) {
            return rule
        } catch {
            return nil
        }
    }

    @Test func allowedURLsKeepTheirPathAndQuery() throws {
        let url = try policy.check("https://Scontent-LAX3-1.xx.fbcdn.net/v/t1/p.jpg?oh=ab&oe=6553F1A0#frag")
        #expect(url.host == "scontent-lax3-1.xx.fbcdn.net" && url.port == nil)
        #expect(url.text == "https://scontent-lax3-1.xx.fbcdn.net/v/t1/p.jpg?oh=ab&oe=6553F1A0")
        #expect(url.expiresAt == Date(timeIntervalSince1970: 0x6553_F1A0))
        let lookaside = try policy.check("HTTPS://platform-lookaside.fbsbx.com:443?asid=1&ext=1553045173&hash=x")
        #expect(lookaside.port == 443 && lookaside.pathAndQuery == "/?asid=1&ext=1553045173&hash=x")
        #expect(lookaside.expiresAt == Date(timeIntervalSince1970: 1_553_045_173))
        #expect(lookaside.description == "https://platform-lookaside.fbsbx.com:443")
        #expect(try policy.check("https://fbcdn.net/a").host == "fbcdn.net")
    }

    @Test func everythingElseIsRefused() {
        #expect(refusal("http://scontent.fbcdn.net/a.jpg") == .scheme)
        #expect(refusal("ftp://scontent.fbcdn.net/a.jpg") == .scheme)
        #expect(refusal("file:///etc/passwd") == .scheme)
        #expect(refusal("https://evilfbcdn.net/a") == .host)
        #expect(refusal("https://fbcdn.net.evil.com/a") == .host)
        #expect(refusal("https://127.0.0.1/a") == .host)
        #expect(refusal("https://fbcdn.net@evil.com/a") == .malformedURL)
        #expect(refusal("https://evil.com\\@fbcdn.net/a") == .malformedURL)
        #expect(refusal("https://evil.com#@fbcdn.net/") == .host)
        #expect(refusal("https://[::1]/a") == .malformedURL)
        #expect(refusal("https://fbcdn.net:99999/a") == .malformedURL)
        #expect(refusal("https://fbcdn.net:/a") == .malformedURL)
        #expect(refusal("https://%66bcdn.net/a") == .malformedURL)
        #expect(refusal("https://fbcdn.net./a") == .malformedURL)
        #expect(refusal("https://a..fbcdn.net/a") == .malformedURL)
        #expect(refusal("https://x.fbcdn.net/a b") == .malformedURL)
        #expect(refusal("https://x.fbcdn.net/\u{e9}") == .malformedURL)
        #expect(refusal("scontent.fbcdn.net/a.jpg") == .malformedURL)
        #expect(refusal("") == .malformedURL)
        #expect(refusal("https://x.fbcdn.net/" + String(repeating: "a", count: 5000)) == .malformedURL)
        let loopback = PictureURLPolicy(hostSuffixes: ["127.0.0.1"], allowsHTTP: true)
        #expect(refusal("http://127.0.0.1:8080/p.png", loopback) == nil)
        #expect(refusal("http://localhost:8080/p.png", loopback) == .host)
        #expect(refusal("http://10.127.0.0.1/p.png", loopback) == .host)
    }

    @Test func redirectsResolveAgainstTheirURLAndAreCheckedAgain() throws {
        let base = try policy.check("https://lookaside.fbsbx.com/platform/profilepic/?asid=1")
        #expect(try policy.resolve("https://scontent.xx.fbcdn.net/p.jpg", against: base).host == "scontent.xx.fbcdn.net")
        #expect(try policy.resolve("//a.fbcdn.net/p", against: base).text == "https://a.fbcdn.net/p")
        #expect(try policy.resolve("/x/y.png?z=1", against: base).text == "https://lookaside.fbsbx.com/x/y.png?z=1")
        #expect(try policy.resolve("pic.png", against: base).text == "https://lookaside.fbsbx.com/platform/profilepic/pic.png")
        #expect(throws: PictureError.refused(.host)) { try policy.resolve("https://evil.com/p", against: base) }
        #expect(throws: PictureError.refused(.scheme)) { try policy.resolve("http://a.fbcdn.net/p", against: base) }
    }

    @Test func imageTypesNeedTheirMagicNumbers() {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0]
        let webp = Array("RIFF".utf8) + [1, 2, 3, 4] + Array("WEBPVP8 ".utf8)
        #expect(PictureImageType.sniff(png) == .png && PictureImageType.sniff([0xFF, 0xD8, 0xFF, 0xDB]) == .jpeg)
        #expect(PictureImageType.sniff(Array("GIF87a...".utf8)) == .gif && PictureImageType.sniff(webp) == .webp)
        #expect(PictureImageType.sniff(Array("<svg xmlns".utf8)) == nil && PictureImageType.sniff([]) == nil)
        #expect(PictureImageType.sniff(Array("RIFF....WAVE".utf8)) == nil)
        #expect(PictureImageType(contentType: "IMAGE/PNG; charset=binary") == .png)
        #expect(PictureImageType(contentType: "image/jpg") == .jpeg)
        for other in ["image/svg+xml", "text/html", "image/png-but-not", "", "application/octet-stream"] {
            #expect(PictureImageType(contentType: other) == nil, "\(other)")
        }
        #expect(PictureImageType.png.matches(png) && !PictureImageType.jpeg.matches(png))
    }

    @Test func etagsAndIfNoneMatch() {
        let etag = PictureETag.of([1, 2, 3])
        #expect(etag.count == 34 && etag == PictureETag.of([1, 2, 3]) && etag != PictureETag.of([1, 2]))
        #expect(PictureETag.matches(etag, etag) && PictureETag.matches("W/" + etag, etag))
        #expect(PictureETag.matches("\"a\" , \(etag)", etag) && PictureETag.matches("*", etag))
        #expect(!PictureETag.matches(nil, etag) && !PictureETag.matches("\"a\"", etag) && !PictureETag.matches("", etag))
        #expect(PictureETag.matches("\"a\",\t" + etag + " ", etag))
        #expect(!PictureETag.matches("W/", etag) && !PictureETag.matches(" , ", etag))
        #expect(PictureETag.matches(" * ", etag) && !PictureETag.matches("**", etag) && !PictureETag.matches("*x", etag))
        #expect(!PictureETag.matches(String(etag.dropLast()), etag) && !PictureETag.matches(etag + "x", etag))
        #expect(!PictureETag.matches(etag.uppercased(), etag) || etag == etag.uppercased())
        #expect(PictureETag.matches("\"a\",,W/\(etag)", etag), "an empty item is skipped")
    }

    @Test func sizeKeys() {
        #expect(GraphPictureSize.default.cacheKey == "default")
        #expect(GraphPictureSize(kind: .large).cacheKey == "type=large")
        #expect(GraphPictureSize(kind: .square, width: 64).cacheKey == "type=square,w=64")
        #expect(GraphPictureSize(width: 10, height: 20).cacheKey == "w=10,h=20")
    }

    @Test func theMemoryLayerIsBoundedAndKeyedByETag() {
        let cache = PictureMemoryCache(maxEntries: 3, maxBytes: 400)
        func key(_ n: Int) -> PictureKey { PictureKey(appID: "a", facebookUserID: "u\(n)", sizeKey: "default") }
        for n in 0..<3 { cache.store(key(n), etag: "e\(n)", body: [UInt8](repeating: UInt8(n), count: 50)) }
        #expect(cache.body(key(0), etag: "e0") != nil)  // 0 is now the most recently used
        cache.store(key(3), etag: "e3", body: [3])
        #expect(cache.count == 3 && cache.body(key(1), etag: "e1") == nil && cache.body(key(0), etag: "e0") != nil)
        #expect(cache.body(key(3), etag: "other") == nil)
        cache.store(key(4), etag: "e4", body: [UInt8](repeating: 4, count: 101))  // over a quarter: not kept
        #expect(cache.body(key(4), etag: "e4") == nil)
        for n in 5..<9 { cache.store(key(n), etag: "e\(n)", body: [UInt8](repeating: 0, count: 100)) }
        #expect(cache.byteCount <= 400 && cache.count <= 3)
    }
}
