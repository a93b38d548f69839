import FBSessionsCore
import Testing

@Suite("The port's classification rules (FBSessionsCore, no sockets)")
struct GraphClassificationTests {
    @Test("190 and 102 subcodes map to the contract's closed reasons; 493 and other codes close nothing")
    func closedReasons() {
        let table: [(Int, Int?, ClosedReason?)] = [
            (190, 458, .appRemoved), (190, 459, .checkpoint), (190, 460, .passwordChanged),
            (190, 463, .tokenExpired), (190, 464, .userUnconfirmed), (190, 466, .revoked), (190, 467, .tokenInvalid),
            (190, nil, .tokenInvalid), (190, 461, .tokenInvalid), (102, nil, .tokenInvalid), (102, 463, .tokenExpired),
            (190, 493, nil), (100, nil, nil), (200, nil, nil), (4, nil, nil), (1, nil, nil),
        ]
        for (code, subcode, reason) in table {
            #expect(ClosedReason(graphCode: code, subcode: subcode) == reason, "\(code)/\(String(describing: subcode))")
        }
    }

    @Test("closed reasons have the contract's wire names")
    func wireNames() {
        #expect(
            ClosedReason.allCases.map(\.rawValue) == [
                "logged_out", "token_expired", "token_invalid", "password_changed", "app_removed", "checkpoint",
                "user_unconfirmed", "revoked", "replaced", "data_deletion",
            ])
    }

    @Test("classification order: auth family, permissions, throttling (even if transient), 1/2/is_transient, 5xx")
    func order() {
        func classify(_ code: Int, _ subcode: Int? = nil, transient: Bool = false, status: Int = 400) -> GraphError {
            GraphError.classify(
                GraphErrorDetail(code: code, subcode: subcode, message: "m", isTransient: transient, httpStatus: status)
            )
        }
        #expect(classify(190, 463).closedReason == .tokenExpired)
        #expect(
            classify(190, 493)
                == .dataAccessExpired(
                    GraphErrorDetail(
                        code: 190, subcode: 493, message: "m", httpStatus: 400)))
        #expect(classify(17, transient: true).outcome == "rate_limited")
        #expect(classify(80001).outcome == "rate_limited")
        #expect(classify(613, 1996).outcome == "rate_limited")
        #expect(classify(250).outcome == "permission_missing")
        #expect(classify(299).outcome == "permission_missing")
        #expect(classify(300).outcome == "other")
        #expect(classify(1).outcome == "transient")
        #expect(classify(2, status: 500).outcome == "transient")
        #expect(classify(100, transient: true).outcome == "transient")
        #expect(classify(100, status: 503).outcome == "transient")
        #expect(classify(100).outcome == "other")
        #expect(classify(368).outcome == "other")
        #expect(classify(190, transient: true).closedReason == .tokenInvalid)
    }

    @Test("isRetryable is true exactly for transient and rate-limited errors")
    func retryable() {
        let detail = GraphErrorDetail(code: 1, message: "m")
        #expect(GraphError.transient(GraphTransientFailure(.timeout)).isRetryable)
        #expect(GraphError.rateLimited(nil, detail).isRetryable)
        #expect(!GraphError.invalidToken(.tokenExpired, detail).isRetryable)
        #expect(!GraphError.dataAccessExpired(detail).isRetryable)
        #expect(!GraphError.permissionMissing(detail).isRetryable)
        #expect(!GraphError.other(detail).isRetryable)
        #expect(!GraphTransientFailure(.connectFailed).mayHaveReachedGraph)
        #expect(GraphTransientFailure(.timeout).mayHaveReachedGraph)
    }

    @Test("descriptions name the case and codes; the message is only in debugDescription")
    func descriptions() {
        let detail = GraphErrorDetail(
            code: 190, subcode: 463, type: "OAuthException", message: "Session has expired", fbtraceID: "Ab1",
            httpStatus: 400
        )
        let error = GraphError.invalidToken(.tokenExpired, detail)
        #expect(
            error.description
                == "GraphError.invalidToken(token_expired, 190/463 OAuthException http=400 fbtrace_id=Ab1)")
        #expect(error.debugDescription.hasSuffix(": Session has expired"))
        #expect(!error.description.contains("Session has expired"))
        #expect(
            GraphError.transient(GraphTransientFailure(.timeout, attempts: 3)).description
                == "GraphError.transient(timeout after 3 attempts)")
    }
}
