import HTTPServer

/// The login dialog's HTML: plain forms, no JavaScript.
enum DialogPage {
    /// The page that lets a person pick a user and the permissions to grant, then continue or cancel.
    static func login(_ login: DialogLogin, users: [EmulatedUser], version: String) -> Response {
        var html = header(title: "Log in with Facebook")
        html += "<h1>\(escape(login.app.name)) wants to know who you are</h1>\n"
        switch login.authType {
        case "reauthenticate": html += "<p class=note>Please re-enter your password to continue.</p>\n"
        case "reauthorize": html += "<p class=note>Renew this app\u{2019}s access to your information.</p>\n"
        case "rerequest": html += "<p class=note>This app is asking again for permissions you declined.</p>\n"
        default: break
        }
        if let configuration = login.configuration {
            let kind = configuration.tokenKind == .systemUser ? "a system user of your business" : "you"
            html += "<p class=note>Facebook Login for Business: this app asks to act as \(kind) on the assets"
            html += " below; grant all of it or cancel.</p>\n"
        }
        html += "<form method=post action=\"/\(escape(version))/dialog/oauth\">\n"
        let hidden: [(String, String?)] = [
            ("client_id", login.app.id), ("redirect_uri", login.redirectURI), ("state", login.state),
            ("scope", login.scopes.joined(separator: ",")),
            ("response_type", login.responseTypes.sorted().joined(separator: ",")), ("auth_type", login.authType),
            ("auth_nonce", login.authNonce), ("nonce", login.nonce), ("grants_shown", "1"),
            ("config_id", login.configuration?.id),
            ("override_default_response_type", login.configuration.map { _ in "true" }),
        ]
        for (name, value) in hidden {
            guard let value else { continue }
            html += "<input type=hidden name=\"\(name)\" value=\"\(escape(value))\">\n"
        }
        html += "<fieldset><legend>Continue as</legend>\n"
        if users.isEmpty {
            html += "<p>No users yet: create one with <code>POST /__emulator/users</code>.</p>\n"
        }
        for (index, user) in users.enumerated() {
            let checked = index == 0 ? " checked" : ""
            let detail = user.email.map { " &lt;\(escape($0))&gt;" } ?? ""
            html += "<label><input type=radio name=user_id value=\"\(escape(user.id))\"\(checked)> "
            html += "\(escape(user.displayName))\(detail)</label><br>\n"
        }
        html += "</fieldset>\n<fieldset><legend>Permissions</legend>\n"
        html += "<label><input type=checkbox checked disabled> public_profile (always granted)</label><br>\n"
        // Without a chosen user the page cannot know the earlier grant; it offers every requested permission.
        for scope in login.asked(given: Grant(granted: [], declined: [], expired: [])) {
            html += "<label><input type=checkbox name=grant value=\"\(escape(scope))\" checked> "
            html += "\(escape(scope))</label><br>\n"
        }
        html += "</fieldset>\n"
        // The App Tracking Transparency choice: declining it gives Limited Login (an AuthenticationToken).
        let limited = login.limitedTracking ? " checked" : ""
        let enabled = login.limitedTracking ? "" : " checked"
        html += "<fieldset><legend>Tracking</legend>\n"
        html += "<label><input type=radio name=tracking value=enabled\(enabled)> Allow tracking (a Graph access token)"
        html += "</label><br>\n<label><input type=radio name=tracking value=limited\(limited)> Ask app not to track"
        html += " (Limited Login: an AuthenticationToken)</label><br>\n</fieldset>\n"
        html += "<button type=submit name=action value=approve>Continue</button>\n"
        html += "<button type=submit name=action value=cancel>Cancel</button>\n</form>\n</body></html>\n"
        return page(status: 200, html: html)
    }

    /// The dialog's error page.
    static func error(status: Int, title: String, message: String) -> Response {
        var html = header(title: title)
        html += "<h1>\(escape(title))</h1>\n<p>\(escape(message))</p>\n</body></html>\n"
        return page(status: status, html: html)
    }

    private static func header(title: String) -> String {
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>\(escape(title))</title>\n"
            + "<style>body{font-family:sans-serif;max-width:36em;margin:2em auto}.note{color:#555}</style>\n"
            + "</head><body>\n"
    }

    private static func page(status: Int, html: String) -> Response {
        Response(
            status: status,
            headers: [
                "Content-Type": "text/html; charset=\"utf-8\"",
                "Cache-Control": "private, no-cache, no-store, must-revalidate", "X-Frame-Options": "DENY",
            ],
            body: Array(html.utf8))
    }

    /// Escapes text for HTML content and attribute values.
    static func escape(_ text: String) -> String {
        var output = ""
        for character in text {
            switch character {
            case "&": output += "&amp;"
            case "<": output += "&lt;"
            case ">": output += "&gt;"
            case "\"": output += "&quot;"
            case "'": output += "&#39;"
            default: output.append(character)
            }
        }
        return output
    }
}
