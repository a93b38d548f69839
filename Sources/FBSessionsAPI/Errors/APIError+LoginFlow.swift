import FBSessionsCore

/// The statuses and codes of the login flow and of Facebook's callbacks; called from ``APIError/from(_:)``.
extension APIError {
    static func loginFlowError(_ error: LoginFlowError) -> APIError {
        switch error {
        case .invalidState:
            return APIError(
                400, .invalidState, "The state is not one this app issued; make a new login URL.", extra: ["field": "state"])
        case .stateOwnerMismatch:
            return APIError(
                400, .invalidState, "The state was issued for another owner; make a login URL for this owner.",
                extra: ["field": "state"])
        case .stateUsed:
            return APIError(400, .stateUsed, "The state was used already; make a new login URL.", extra: ["field": "state"])
        case .stateExpired:
            return APIError(
                400, .stateExpired, "The state expired (10 minutes); make a new login URL.", extra: ["field": "state"])
        case .redirectURINotAllowed:
            return APIError(
                400, .redirectURINotAllowed, "redirect_uri must be exactly one of the app's registered redirect URIs.",
                extra: ["field": "redirect_uri"])
        case .slotMismatch(let bound):
            return APIError.invalid("The login URL was made for slot \(bound); send that slot or none.", field: "slot")
        case .codeRejected(let detail):
            var mapped = APIError(422, .codeRejected, "Facebook refused the code (used, expired or not from this login URL).")
            mapped.graph = detail
            return mapped
        case .reauthenticationUnconfirmed:
            return APIError(422, .tokenRejected, "Facebook did not confirm the re-authentication this login URL asked for.")
        case .alreadyLinked(let sessionID, let slot):
            var mapped = APIError(
                409, .alreadyLinked, "This Facebook account is already linked to this owner; nothing was changed.",
                extra: ["session_id": sessionID])
            mapped.integers["slot"] = slot
            return mapped
        }
    }

    static func signedRequestError(_ error: SignedRequestError) -> APIError {
        let message: String
        switch error {
        case .missing: message = "Send one signed_request form field."
        case .tooLarge: message = "The signed_request is longer than \(SignedRequest.maxLength) characters."
        case .malformed: message = "The signed_request is not two base64url parts with an HMAC-SHA256 signature."
        case .unknownApp: message = "No app with this Facebook app id is registered here."
        case .badSignature: message = "The signed_request is not signed with the app secret."
        case .invalidPayload: message = "The signed_request payload is not a small JSON object with a user_id."
        case .unsupportedAlgorithm: message = "The signed_request algorithm must be HMAC-SHA256."
        }
        return APIError(400, .invalidSignedRequest, message, extra: ["field": "signed_request"])
    }
}
