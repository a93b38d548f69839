/// `GET /me` and `GET /{user-id}` (docs/facebook-graph.md §2, §12.4).
extension GraphRoutes {
    /// Fields of the User node that the emulator does not model: asking for them is not an error, they are
    /// simply left out (as Graph leaves out fields without a value).
    static let unmodeledUserFields: Set<String> = [
        "about", "age_range", "birthday", "cover", "currency", "devices", "education", "friends", "gender",
        "hometown", "install_type", "installed", "is_guest_user", "languages", "likes", "locale", "location",
        "photos", "posts", "quotes", "significant_other", "sports", "third_party_id", "timezone",
        "token_for_business", "updated_time", "verified", "website", "work",
    ]

    /// `GET /{id}`: a user (or `me`), the Page of a Page token, or the caller's own app with its app token.
    static func node(_ request: GraphRequest, store: inout EmulatorStore) -> GraphAnswer {
        let node = request.segments[0]
        guard request.method == "GET" else { return GraphAnswer(.error(.unsupported(request.method, id: node))) }
        switch Self.caller(request, store: store, needsData: true) {
        case .failure(let error):
            return GraphAnswer(.error(error))
        case .success(let caller):
            switch nodeValue(node, caller: caller, request: request, store: &store) {
            case .failure(let error): return GraphAnswer(.error(error))
            case .success(let value): return GraphAnswer(.json(value))
            }
        }
    }

    /// `GET /?ids=a,b` (multiple-ID read, docs/facebook-graph.md §2.5): one object keyed by each name as asked,
    /// holding what `GET /{name}` answers with the same `fields`; names are read once each, in order. The first
    /// name that fails fails the whole request with its error.
    static func nodes(_ request: GraphRequest, store: inout EmulatorStore) -> GraphAnswer {
        guard request.method == "GET" else { return GraphAnswer(.error(.unsupported(request.method, id: ""))) }
        let caller: Caller
        switch Self.caller(request, store: store, needsData: true) {
        case .failure(let error): return GraphAnswer(.error(error))
        case .success(let found): caller = found
        }
        var members: [(String, JSONValue)] = []
        var seen: Set<String> = []
        for raw in (request.parameter("ids") ?? "").split(separator: ",", omittingEmptySubsequences: false) {
            let name = raw.trimmingSpaces
            guard !name.isEmpty else { return GraphAnswer(.error(.emptyIdentifier)) }
            guard seen.insert(name).inserted else { continue }
            switch nodeValue(name, caller: caller, request: request, store: &store) {
            case .failure(let error): return GraphAnswer(.error(error))
            case .success(let value): members.append((name, value))
            }
        }
        return GraphAnswer(.json(.object(members)))
    }

    /// What `GET /{node}` answers for `caller`: the Page of a Page token, the app of an app token, else a user.
    /// A name that is neither `me` nor digits is an alias, and the emulator knows none (803).
    static func nodeValue(
        _ node: String, caller: Caller, request: GraphRequest, store: inout EmulatorStore
    ) -> Result<JSONValue, GraphError> {
        if case .user(let record) = caller, record.kind == .page, node == "me" || node == record.pageID {
            return pageNode(record, request: request)
        }
        if case .app(let app) = caller, node == app.id { return appNode(app, request: request) }
        guard node == "me" || RandomText.isNumeric(node) else { return .failure(.aliasNotFound(node)) }
        let user: EmulatedUser
        switch subject(node, method: request.method, caller: caller, store: store) {
        case .failure(let error): return .failure(error)
        case .success(let found): user = found
        }
        let fields: [FieldRequest]
        switch FieldSelection.parse(request.parameter("fields") ?? "") {
        case .failure(let error): return .failure(error)
        case .success(let parsed): fields = parsed.isEmpty ? defaultFields : parsed
        }
        // The viewer's permissions apply to the viewer's own profile (or to an app reading its users).
        var permissions: Grant?
        switch caller {
        case .user(let record) where record.userID == user.id:
            permissions = store.permissions(appID: record.appID, userID: user.id, token: record)
        case .app(let app):
            permissions = store.permissions(appID: app.id, userID: user.id, token: nil)
        default:
            permissions = nil
        }
        var dataExpired = false
        if case .user(let record) = caller { dataExpired = record.dataAccessExpired(now: store.now) }
        var members: [(String, JSONValue)] = []
        var seen: Set<String> = []
        for field in fields where seen.insert(field.name).inserted {
            switch userField(field, user: user, permissions: permissions, request: request, store: &store) {
            case .failure(let error): return .failure(error)
            case .success(let value?): members.append((field.name, value))
            case .success(nil): break
            }
            if field.name == "permissions", let permissions {
                members.append(("permissions", .object([("data", permissionList(permissions, dataExpired))])))
            }
        }
        if !seen.contains("id") { members.append(("id", .string(user.id))) }
        return .success(.object(members))
    }

    /// `fields` when none are asked for: `name` and `id` (§2.1).
    static let defaultFields = [
        FieldRequest(name: "name", modifiers: [:], subfields: nil),
        FieldRequest(name: "id", modifiers: [:], subfields: nil),
    ]

    /// One field's value; nil leaves it out (no value, or no permission).
    static func userField(
        _ field: FieldRequest, user: EmulatedUser, permissions: Grant?, request: GraphRequest,
        store: inout EmulatorStore
    ) -> Result<JSONValue?, GraphError> {
        func text(_ value: String?) -> Result<JSONValue?, GraphError> {
            guard let value, !value.isEmpty else { return .success(nil) }
            return .success(.string(value))
        }
        let granted = permissions?.granted ?? []
        switch field.name {
        case "id": return .success(.string(user.id))
        case "name": return text(user.displayName)
        case "first_name": return text(user.firstName)
        case "middle_name": return text(user.middleName)
        case "last_name": return text(user.lastName)
        case "short_name": return text(user.firstName ?? user.displayName)
        case "name_format":
            let hasMiddle = !(user.middleName ?? "").isEmpty
            return .success(.string(hasMiddle ? "{first} {middle} {last}" : "{first} {last}"))
        case "email": return granted.contains("email") ? text(user.email) : .success(nil)
        case "link": return granted.contains("user_link") ? text(user.link) : .success(nil)
        case "permissions": return .success(nil)
        case "picture":
            let size: PictureSize
            switch PictureSize.resolve(
                type: field.modifiers["type"], width: field.modifiers["width"], height: field.modifiers["height"],
                limit: store.configuration.maxPictureSize)
            {
            case .failure(let error): return .failure(error)
            case .success(let resolved): size = resolved
            }
            var data = pictureData(user: user, size: size, request: request, store: &store)
            if let subfields = field.subfields, !subfields.isEmpty, let members = data.objectValue {
                let wanted = Set(subfields.map(\.name))
                data = .object(members.filter { wanted.contains($0.0) })
            }
            return .success(.object([("data", data)]))
        default:
            if unmodeledUserFields.contains(field.name) { return .success(nil) }
            return .failure(.nonexistingField(field.name))
        }
    }

    /// `/me` with a Page token: the Page node, `id` and `name` only.
    static func pageNode(_ record: TokenRecord, request: GraphRequest) -> Result<JSONValue, GraphError> {
        var members: [(String, JSONValue)] = []
        switch FieldSelection.parse(request.parameter("fields") ?? "") {
        case .failure(let error): return .failure(error)
        case .success(let fields):
            for field in fields.isEmpty ? defaultFields : fields {
                switch field.name {
                case "id": members.append(("id", .string(record.pageID ?? "")))
                case "name": members.append(("name", .string(record.pageName ?? "")))
                default: return .failure(.nonexistingField(field.name, node: "Page"))
                }
            }
        }
        if !members.contains(where: { $0.0 == "id" }) { members.append(("id", .string(record.pageID ?? ""))) }
        return .success(.object(members))
    }

    /// The Application node for its own app token (docs/facebook-graph.md §2.6): by default `link`, `name` and
    /// `id` (`category` and `namespace` too when set; the emulator's apps have neither, and fields without a value
    /// are left out); with `fields`, those asked among `id`, `name`, `link`, `category`, `namespace`.
    static func appNode(_ app: EmulatedApp, request: GraphRequest) -> Result<JSONValue, GraphError> {
        let link = "https://www.facebook.com/games/?app_id=" + app.id
        var names = ["link", "name", "id"]
        switch FieldSelection.parse(request.parameter("fields") ?? "") {
        case .failure(let error): return .failure(error)
        case .success(let fields) where !fields.isEmpty: names = fields.map(\.name)
        case .success: break
        }
        var members: [(String, JSONValue)] = []
        for name in names where !members.contains(where: { $0.0 == name }) {
            switch name {
            case "id": members.append(("id", .string(app.id)))
            case "name": members.append(("name", .string(app.name)))
            case "link": members.append(("link", .string(link)))
            case "category", "namespace": break
            default: return .failure(.nonexistingField(name, node: "Application"))
            }
        }
        if !members.contains(where: { $0.0 == "id" }) { members.append(("id", .string(app.id))) }
        return .success(.object(members))
    }
}
