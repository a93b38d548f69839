/// `GET|DELETE /{id}/permissions[/{permission}]` (docs/facebook-graph.md §6, §12.9).
extension GraphRoutes {
    static func permissions(_ request: GraphRequest, store: inout EmulatorStore) -> GraphAnswer {
        let node = request.segments[0]
        let named = request.segments.count == 3 ? request.segments[2] : nil
        guard request.method == "GET" || request.method == "DELETE" else {
            return GraphAnswer(.error(.unsupported(request.method, id: node)))
        }
        let caller: Caller
        switch Self.caller(request, store: store, needsData: false) {
        case .failure(let error): return GraphAnswer(.error(error))
        case .success(let found): caller = found
        }
        let appID: String
        let user: EmulatedUser
        var token: TokenRecord?
        switch caller {
        case .user(let record):
            // Another user's permissions are not the caller's to read or change.
            if node != "me" && node != record.userID {
                guard store.users[node] != nil, store.isVisible(userID: node, to: record.appID) else {
                    return GraphAnswer(.error(.unsupported(request.method, id: node)))
                }
                return GraphAnswer(.error(.permissionDenied))
            }
            guard let found = store.users[record.userID ?? ""] else {
                return GraphAnswer(.error(.unsupported(request.method, id: node)))
            }
            (appID, user, token) = (record.appID, found, record)
        case .app, .anonymous, .client:
            switch subject(node, method: request.method, caller: caller, store: store) {
            case .failure(let error): return GraphAnswer(.error(error))
            case .success(let found): (appID, user) = (caller.appID ?? "", found)
            }
        }
        if request.method == "DELETE" {
            if let named {
                store.revoke(named, appID: appID, userID: user.id)
            } else {
                store.revokeAll(appID: appID, userID: user.id)
            }
            return GraphAnswer(.success)
        }
        guard let grant = store.permissions(appID: appID, userID: user.id, token: token) else {
            return GraphAnswer(.json(.object([("data", .array([]))])))
        }
        let dataExpired = token?.dataAccessExpired(now: store.now) ?? false
        var list = permissionList(grant, dataExpired).arrayValue ?? []
        let wantedPermission = named ?? request.parameter("permission")
        let wantedStatus = request.parameter("status")
        list = list.filter { entry in
            (wantedPermission == nil || entry["permission"]?.stringValue == wantedPermission)
                && (wantedStatus == nil || entry["status"]?.stringValue == wantedStatus)
        }
        return GraphAnswer(.json(.object([("data", .array(list))])))
    }

    /// `[{"permission","status"}]`: granted (reported `expired` once data access has expired), declined, expired.
    static func permissionList(_ grant: Grant, _ dataExpired: Bool) -> JSONValue {
        func entry(_ permission: String, _ status: String) -> JSONValue {
            .object([("permission", .string(permission)), ("status", .string(status))])
        }
        return .array(
            grant.granted.map { entry($0, dataExpired ? "expired" : "granted") }
                + grant.declined.map { entry($0, "declined") } + grant.expired.map { entry($0, "expired") })
    }
}
