import Foundation
import Testing

@testable import FBSessionsAPI

/// The byte matcher (``PathTemplate/match(ascii:)``) answers what the split-path matcher answered, for the
/// product's templates and awkward paths: empty segments, trailing slashes, bad and good percent-encoding,
/// non-ASCII bytes, a Kelvin sign (canonically equal to `K`).
@Suite struct PathMatchingTests {
    static let templates = [
        "/healthz", "/v1/sessions", "/v1/sessions/{id}", "/v1/sessions/{id}/token", "/v1/owners/{owner}/sessions",
        "/v1/owners/{owner}/active", "/v1/K", "/v1/{a}/{b}",
    ].map(PathTemplate.init)

    static let paths = [
        "", "/", "//", "/healthz", "/healthz/", "/healthzz", "/v1/sessions", "/v1/sessions/", "/v1/sessions/ses_1",
        "/v1/sessions/ses_1/token", "/v1/sessions//token", "/v1/owners/a%2Fb%40c/sessions", "/v1/owners/%zz/sessions",
        "/v1/owners/%ff%fe/sessions", "/v1/owners/%zz/sessions/x", "/v1/owners/é/sessions", "/v1/owners/a+b/sessions",
        "/v1/\u{212A}", "/v1/K", "/v1/k", "/v1/%4B", "healthz", "/v1/sessions/%", "/v1/sessions/%4", "/v1/x/y",
        "/v1/%zz/y", "/v1/x/%zz", "/v1/x//", "/\u{301}v1/sessions",
    ]

    @Test func byteMatcherAgreesWithTheSplitMatcher() throws {
        var paths = Self.paths
        let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Fuzz/Corpus/FuzzPathQuery")
        for file in (try? FileManager.default.contentsOfDirectory(at: corpus, includingPropertiesForKeys: nil)) ?? [] {
            let target = String(decoding: try Data(contentsOf: file), as: UTF8.self)
            paths.append(String(target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""))
        }
        for template in Self.templates {
            for path in paths {
                let reference: PathTemplate.Match =
                    path.hasPrefix("/") ? template.match(segments: PathTemplate.segments(of: path)) : .noMatch
                #expect(describe(template.match(path)) == describe(reference), "\(template) vs \(path)")
            }
        }
    }

    private func describe(_ match: PathTemplate.Match) -> String {
        switch match {
        case .noMatch: "no match"
        case .badEncoding: "bad encoding"
        case .matched(let parameters): "matched " + parameters.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        }
    }
}
