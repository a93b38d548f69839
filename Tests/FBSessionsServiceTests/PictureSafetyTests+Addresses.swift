import FBSessionsCore
import FBSessionsGraph
import Foundation
import HTTPClient
import Support
import Testing
import TestSupport

/// SSRF: picture URLs and redirects that point at the service's own network are refused before any connection.
/// "Before any connection" is proven with a listening socket that counts accepted connections: every hostile URL
/// below is built with that socket's port, and a resolver (injected, so no DNS or /etc/hosts is involved) points
/// the DNS names at its address; the count stays 0, while a control URL that is allowed reaches it.
extension PictureSafetyTests {
    /// A resolver standing in for DNS: fixed answers, and a count of lookups.
    final class FakeDNS: Sendable {
        private let answers: [String: [String]]
        private let asked = Locked<[String]>([])
        init(_ answers: [String: [String]]) { self.answers = answers }
        var lookups: [String] { asked.withLock { $0 } }
        func resolve(_ host: String) throws -> [String] {
            asked.withLock { $0.append(host) }
            guard let found = answers[host] else { throw URLError(.cannotFindHost) }
            return found
        }
    }

    static let dns: [String: [String]] = [
        "evil.fbcdn.net": ["127.0.0.1"],
        "meta.fbcdn.net": ["169.254.169.254"],
        "ten.fbcdn.net": ["10.1.2.3"],
        "lan.fbcdn.net": ["192.168.0.10"],
        "docker.fbcdn.net": ["172.17.0.1"],
        "cgnat.fbcdn.net": ["100.64.0.1"],
        "zero.fbcdn.net": ["0.0.0.0"],
        "v6loop.fbcdn.net": ["::1"],
        "mapped.fbcdn.net": ["::ffff:127.0.0.1"],
        "ula.fbcdn.net": ["fd00::1"],
        "linklocal.fbcdn.net": ["fe80::1%lo"],
        "nat64.fbcdn.net": ["64:ff9b::a9fe:a9fe"],
        "sixtofour.fbcdn.net": ["2002:7f00:1::"],
        "mixed.fbcdn.net": ["157.240.1.35", "127.0.0.1"],
        "localhost.fbcdn.net": ["127.0.0.1"],
        "127.0.0.1.fbcdn.net": ["127.0.0.1"],
        "cdn.test": ["127.0.0.1"],  // listed exactly: the control that does connect
        "public.fbcdn.net": ["157.240.1.35"],
    ]

    @Test func addressesOffThePublicInternetAreRefusedWithoutAConnection() async throws {
        let peer = try ScriptedPeer { _ in .respond(status: 200, headers: [("Content-Type", "image/gif")], body: ScriptedCDN.gif) }
        defer { peer.stop() }
        let port = peer.port
        let dns = FakeDNS(Self.dns)
        let fetcher = try PictureFetcher(allowsHTTP: true, resolver: { try dns.resolve($0) })
        defer { fetcher.shutdown() }
        let policy = PictureURLPolicy(hostSuffixes: ["fbcdn.net", "cdn.test"], allowsHTTP: true)
        let limits = PictureFetchLimits(maxBytes: 65_536, timeout: 2, maxRedirects: 3)

        /// The refusal for one URL, as the picture service would meet it: the policy, then the fetcher.
        func outcome(_ text: String) async -> String {
            do {
                let url = try policy.check(text)
                _ = try await fetcher.fetch(url, policy: policy, limits: limits)
                return "fetched"
            } catch PictureError.refused(let rule) {
                return rule.rawValue
            } catch {
                return "\(error)"
            }
        }

        let hostile: [(String, String)] = [
            // Literal addresses and their spellings (not listed): the host rule.
            ("http://10.0.0.1:\(port)/p.gif", "host"), ("http://172.16.0.1:\(port)/p.gif", "host"),
            ("http://192.168.1.1:\(port)/p.gif", "host"), ("http://169.254.169.254:\(port)/latest/meta-data", "host"),
            ("http://127.0.0.2:\(port)/p.gif", "host"), ("http://0.0.0.0:\(port)/p.gif", "host"),
            ("http://127.1:\(port)/p.gif", "host"), ("http://2130706433:\(port)/p.gif", "host"),
            ("http://0x7f000001:\(port)/p.gif", "host"), ("http://0x7f.0.0.1:\(port)/p.gif", "host"),
            ("http://017700000001:\(port)/p.gif", "host"), ("http://0177.0.0.1:\(port)/p.gif", "host"),
            ("http://x.127.0.0.1:\(port)/p.gif", "host"), ("http://1.2.3.0x4.fbcdn.net.0x7f:\(port)/", "host"),
            ("http://localhost:\(port)/p.gif", "host"), ("http://LOCALHOST:\(port)/p.gif", "host"),
            ("http://localhost.:\(port)/p.gif", "malformed_url"), ("http://127.0.0.1.:\(port)/p.gif", "malformed_url"),
            // IPv6 literals, zones and IPv4-mapped forms: no brackets accepted at all.
            ("http://[::1]:\(port)/p.gif", "malformed_url"), ("http://[::ffff:127.0.0.1]:\(port)/", "malformed_url"),
            ("http://[fc00::1]:\(port)/", "malformed_url"), ("http://[fe80::1%25lo]:\(port)/", "malformed_url"),
            ("http://[0:0:0:0:0:ffff:7f00:1]:\(port)/", "malformed_url"),
            // User info and confusables.
            ("http://user@127.0.0.1:\(port)/p.gif", "malformed_url"), ("http://x.fbcdn.net@127.0.0.1:\(port)/", "malformed_url"),
            ("http://127.0.0.1:\(port)#@x.fbcdn.net/", "host"), ("http://127.0.0.1:\(port)\\@x.fbcdn.net/", "malformed_url"),
            ("http://127.0.0.1%2f.fbcdn.net:\(port)/", "malformed_url"), ("http://127。0。0。1:\(port)/", "malformed_url"),
            ("http://evil.fbcdn.net:\(port):\(port)/", "malformed_url"),
            // DNS names under an allowed suffix that resolve to non-public addresses: the address rule.
        ] + Self.dns.keys.filter { $0.hasSuffix(".fbcdn.net") && $0 != "public.fbcdn.net" }.sorted().map {
            ("http://\($0):\(port)/p.gif", "address")
        }

        for (url, expected) in hostile {
            let got = await outcome(url)
            #expect(got == expected, "\(url): \(got)")
        }
        #expect(peer.connectionCount == 0, "a refused URL was connected to")

        // The control: a host listed exactly reaches the listener through the address the resolver gave, pinned
        // (libcurl could not resolve `cdn.test` itself), after one lookup.
        #expect(await outcome("http://cdn.test:\(port)/p.gif") == "fetched")
        #expect(peer.connectionCount == 1)
        #expect(dns.lookups.filter { $0 == "cdn.test" }.count == 1)
    }

    @Test func redirectsToOtherHostsOrPrivateAddressesAreRefusedWithoutAConnection() async throws {
        let target = try ScriptedPeer { _ in .respond(status: 200, headers: [("Content-Type", "image/gif")], body: ScriptedCDN.gif) }
        defer { target.stop() }
        let next = Locked("/")
        let origin = try ScriptedPeer { _ in .redirect(to: next.withLock { $0 }) }
        defer { origin.stop() }
        let dns = FakeDNS(Self.dns)
        let fetcher = try PictureFetcher(allowsHTTP: true, resolver: { try dns.resolve($0) })
        defer { fetcher.shutdown() }
        let policy = PictureURLPolicy(hostSuffixes: ["fbcdn.net", "cdn.test"], allowsHTTP: true)
        let start = try policy.check("http://cdn.test:\(origin.port)/start.gif")
        let port = target.port
        let cases: [(String, PictureRefusal)] = [
            ("http://127.0.0.1:\(port)/p.gif", .redirect), ("http://localhost:\(port)/p.gif", .redirect),
            ("http://[::1]:\(port)/p.gif", .redirect), ("http://169.254.169.254:\(port)/", .redirect),
            ("//127.0.0.1:\(port)/p.gif", .redirect), ("http://2130706433:\(port)/", .redirect),
            ("http://user@cdn.test:\(port)/", .redirect), ("http://cdn.test.:\(port)/", .redirect),
            ("gopher://cdn.test:\(port)/", .redirect), ("file:///etc/passwd", .redirect),
            ("http://evil.fbcdn.net:\(port)/p.gif", .address), ("http://meta.fbcdn.net:\(port)/", .address),
            ("http://mapped.fbcdn.net:\(port)/", .address), ("http://v6loop.fbcdn.net:\(port)/", .address),
        ]
        for (location, expected) in cases {
            next.withLock { $0 = location }
            do {
                _ = try await fetcher.fetch(start, policy: policy, limits: PictureFetchLimits(timeout: 2))
                Issue.record("\(location) was fetched")
            } catch PictureError.refused(let rule) {
                #expect(rule == expected, "\(location): \(rule)")
            } catch {
                Issue.record("\(location): \(error)")
            }
        }
        #expect(target.connectionCount == 0, "a redirect target was connected to")
        #expect(origin.requestCount >= cases.count)
    }

    @Test func theAddressRuleKnowsEveryNonPublicRange() {
        let blocked = [
            "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.254", "127.0.0.1",
            "127.255.255.254", "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.8", "192.0.2.1",
            "192.168.0.1", "198.18.0.1", "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250",
            "240.0.0.1", "255.255.255.255", "::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:7f00:1",
            "0:0:0:0:0:ffff:a9fe:a9fe", "::127.0.0.1", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0",
            "febf::1", "fec0::1", "ff02::1", "2001:db8::1", "64:ff9b::7f00:1", "2002:a00:1::", "2001::1",
            "100::1", "", "localhost", "1.2.3", "1.2.3.4.5", "01.2.3.4", "256.1.1.1", "::ffff:1.2.3.4.5", "1:2:3:4:5:6:7:8:9",
            "1::2::3", "gggg::1",
        ]
        for address in blocked { #expect(!PictureAddressRule.isPublic(address), "\(address)") }
        let open = [
            "157.240.1.35", "31.13.64.1", "8.8.8.8", "100.63.255.255", "100.128.0.1", "172.15.255.255",
            "172.32.0.1", "192.169.0.1", "198.20.0.1", "223.255.255.255", "2a03:2880:f10c:83:face:b00c:0:25de",
            "2606:4700::1111", "::ffff:157.240.1.35", "64:ff9b::9df0:123", "2002:9df0:123::",
        ]
        for address in open { #expect(PictureAddressRule.isPublic(address), "\(address)") }
    }
}
