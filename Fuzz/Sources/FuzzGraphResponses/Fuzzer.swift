import CFuzzerDriver
import FBSessionsCore
import Foundation
import HTTPClient
@testable import FBSessionsGraph

let endpoints = [
    GraphEndpoint("me", path: "me", authentication: .user(accessToken: "fuzz-token-value")),
    GraphEndpoint("debug_token", path: "debug_token", authentication: .app),
    GraphEndpoint("oauth_access_token", path: "oauth/access_token", authentication: .app, isOAuth: true),
]

/// Graph answers as the client reads them: every wire shape decoded from the body, the error envelope turned into
/// a scrubbed, classified detail, and the `x-app-usage` header parsed (the input is both body and header).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGraphResponses(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Data(bytes: data, count: size)
    let decoder = JSONDecoder()
    let scrubber = SecretScrubber(["fuzz-token-value", "fuzz-app-secret"])
    if let envelope = try? decoder.decode(GraphWire.ErrorEnvelope.self, from: body) {
        let detail = envelope.error.detail(httpStatus: 400, scrub: scrubber.scrub)
        for endpoint in endpoints {
            _ = endpoint.classify(detail, usage: nil)
        }
    }
    if let token = try? decoder.decode(GraphWire.DebugTokenEnvelope.self, from: body) { _ = token }
    if let profile = try? decoder.decode(GraphWire.Profile.self, from: body) { _ = profile }
    if let picture = try? decoder.decode(GraphWire.PictureEnvelope.self, from: body) { _ = picture }
    if let permissions = try? decoder.decode(GraphWire.Permissions.self, from: body) { _ = permissions }
    if let success = try? decoder.decode(GraphWire.Success.self, from: body) { _ = success }
    if let grant = try? decoder.decode(GraphWire.TokenGrant.self, from: body) { _ = grant }
    let text = String(decoding: body, as: UTF8.self)
    _ = GraphClient.appUsage(text)
    _ = scrubber.scrub(text)
    let response = ClientResponse(status: 400, headers: [("x-app-usage", text)], body: Array(body))
    _ = GraphClient.read(response, endpoints[0], scrubber) { _, _ in Result<Int, GraphError>.success(0) }
    return 0
}

/// The entry point SwiftPM's link expects (see Package.swift): libFuzzer's driver with this fuzzer's callback.
@_cdecl("FuzzGraphResponses_main")
public func fuzzGraphResponsesMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzGraphResponses(data, size) }
}
