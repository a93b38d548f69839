import CFuzzerDriver
import Crypto
import Foundation
@testable import FBSessionsCore
@testable import FBSessionsGraph

/// The key of RFC 7515 Appendix A.2, to check signatures against (the corpus holds its example token).
let exampleKey = try? RSAPublicKey(
    modulus: Base64URL.decode(
        "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS"
            + "-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R"
            + "2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDT"
            + "W9gb54h4FRWyuXpoQ") ?? [],
    exponent: [1, 0, 1])

/// Limited Login's parsers of outside input: the token (compact JWS, header, then the claims as if its signature had
/// checked, as a login reads them and as a refresh does, without the nonce, then the refresh's own checks against a
/// stored session, then the RS256 check itself against a fixed key), the key set document (keys made from whatever
/// `n` and `e` it holds), the claims on their own, and `Cache-Control` (the input is all of them at once).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzLimitedLogin(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: bytes, as: UTF8.self)
    if let jws = try? CompactJWS(parsing: text) {
        if let claims = try? AuthenticationTokenClaims(verifiedPayload: jws.payload) {
            _ = try? claims.check(audience: "4242", now: Date(), leeway: 60)
            _ = claims.profile
            _ = claims.permissions
        }
        // A refresh: the same claims without the nonce, then what the refresh route decides with them.
        if let claims = try? AuthenticationTokenClaims(verifiedPayload: jws.payload, nonceRule: .notChecked) {
            _ = try? claims.check(audience: "4242", now: Date(), leeway: 60)
            let record = RefreshRecord(claims: claims, token: text, sessionID: "ses_fuzz", appID: "app_fuzz")
            _ = record.refusal(storedUserID: "10000000000000001")
            _ = record.changesBinding(from: "stored-thumbprint")
            _ = record.changesBinding(from: nil)
            _ = record.profile.changedFields(from: Profile(id: "10000000000000001", name: "Stored Name"))
        }
        _ = exampleKey?.isValidRS256Signature(jws.signature, for: jws.signingInput)
    }
    _ = SessionService.expiry(ofStoredToken: text)
    if let set = try? JSONWebKeySet(parsing: bytes) {
        for key in set.keys.values { _ = key.bitCount }
    }
    _ = try? AuthenticationTokenClaims(verifiedPayload: bytes)
    _ = try? AuthenticationTokenClaims(verifiedPayload: bytes, nonceRule: .notChecked)
    _ = CacheControl.maxAge([text])
    return 0
}

/// The entry point SwiftPM's link expects (see Package.swift): libFuzzer's driver with this fuzzer's callback.
@_cdecl("FuzzLimitedLogin_main")
public func fuzzLimitedLoginMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzLimitedLogin(data, size) }
}
