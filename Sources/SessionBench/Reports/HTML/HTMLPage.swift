import Foundation

/// Text made safe for HTML: every character that could open markup is escaped.
public enum HTMLText {
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default:
                // Control characters other than tab and newline are shown, never passed through.
                if character.value < 0x20 && character != "\n" && character != "\t" || character.value == 0x7F {
                    out += "\\u{\(String(character.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(character)
                }
            }
        }
        return out
    }
}

/// One self-contained HTML page: its style inline, no script, no font or image fetched, and a
/// content security policy that forbids fetching anything at all, so a report opened from a CI
/// artifact makes no request.
public struct HTMLPage: Sendable {
    public let title: String
    private var body = ""
    private var contents: [(id: String, title: String)] = []

    public init(title: String) { self.title = title }

    /// A section heading, listed in the page's contents when `level` is 2.
    public mutating func heading(_ text: String, level: Int = 2, id: String? = nil) {
        let anchor = id ?? Self.anchor(text, taken: contents.map(\.id))
        if level == 2 { contents.append((anchor, text)) }
        body += "<h\(level) id=\"\(anchor)\">\(HTMLText.escape(text))</h\(level)>\n"
    }

    public mutating func paragraph(_ text: String, className: String? = nil) {
        body += "<p\(className.map { " class=\"\($0)\"" } ?? "")>\(HTMLText.escape(text))</p>\n"
    }

    /// A list of lines, each escaped.
    public mutating func list(_ items: [String]) {
        guard !items.isEmpty else { return }
        body += "<ul>" + items.map { "<li>\(HTMLText.escape($0))</li>" }.joined() + "</ul>\n"
    }

    /// Names and values (the run's metadata).
    public mutating func facts(_ pairs: [(String, String)]) {
        body +=
            "<dl class=\"facts\">"
            + pairs.map { "<dt>\(HTMLText.escape($0.0))</dt><dd>\(HTMLText.escape($0.1))</dd>" }.joined() + "</dl>\n"
    }

    /// A table; cells that say a run failed are marked for the eye (bold, boxed), their text
    /// unchanged.
    public mutating func table(_ header: [String], _ rows: [[String]], caption: String? = nil) {
        body += Self.tableHTML(header, rows, caption: caption)
    }

    static func tableHTML(_ header: [String], _ rows: [[String]], caption: String?) -> String {
        var out = "<div class=\"scroll\"><table>"
        if let caption { out += "<caption>\(HTMLText.escape(caption))</caption>" }
        out +=
            "<thead><tr>" + header.map { "<th scope=\"col\">\(HTMLText.escape($0))</th>" }.joined()
            + "</tr></thead><tbody>"
        for row in rows {
            out += "<tr>"
            for (index, cell) in row.enumerated() {
                let failed = Self.failing(cell)
                let tag = index == 0 ? "th scope=\"row\"" : "td"
                let close = index == 0 ? "th" : "td"
                out += "<\(tag)\(failed ? " class=\"bad\"" : "")>\(HTMLText.escape(cell))</\(close)>"
            }
            out += "</tr>"
        }
        return out + "</tbody></table></div>\n"
    }

    /// A verdict cell that is not a pass.
    static func failing(_ cell: String) -> Bool {
        ["FAIL", "HUNG", "CRASHED", "ERROR", "NOT RUN", "violated", "hung", "crashed"].contains {
            cell.hasPrefix($0)
        }
    }

    /// A chart, its caption, and the table behind it (open to anyone who asks for it).
    public mutating func chart(_ chart: SVGChart) {
        body +=
            "<figure id=\"chart-\(chart.id)\">\(chart.svg)<figcaption>\(HTMLText.escape(chart.caption))</figcaption>"
            + "<details><summary>The figures behind “\(HTMLText.escape(chart.title))”</summary>"
            + Self.tableHTML(chart.header, chart.rows, caption: nil) + "</details></figure>\n"
    }

    /// Lines shown as they are (events, an interleaving table), under a label.
    public mutating func preformatted(_ lines: [String], label: String? = nil) {
        guard !lines.isEmpty else { return }
        if let label { body += "<p class=\"label\">\(HTMLText.escape(label))</p>" }
        body += "<pre>" + lines.map(HTMLText.escape).joined(separator: "\n") + "</pre>\n"
    }

    /// A command to copy (a replay, a rerun).
    public mutating func command(_ text: String, label: String) {
        body +=
            "<p class=\"label\">\(HTMLText.escape(label))</p><pre class=\"command\"><code>\(HTMLText.escape(text))</code></pre>\n"
    }

    /// A box for one problem (a violation, a hang), its content added between open and close.
    public mutating func openProblem(_ title: String) {
        body += "<section class=\"problem\"><h3>\(HTMLText.escape(title))</h3>\n"
    }

    public mutating func closeProblem() { body += "</section>\n" }

    /// The whole page.
    public func render(subtitle: String? = nil) -> String {
        var out = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(HTMLText.escape(title))</title>
            <style>\(Self.style)</style>
            </head>
            <body>
            <main>
            <h1>\(HTMLText.escape(title))</h1>

            """
        if let subtitle { out += "<p class=\"subtitle\">\(HTMLText.escape(subtitle))</p>\n" }
        if contents.count > 2 {
            out +=
                "<nav aria-label=\"Contents\"><ul>"
                + contents.map { "<li><a href=\"#\($0.id)\">\(HTMLText.escape($0.title))</a></li>" }.joined()
                + "</ul></nav>\n"
        }
        return out + body + "</main>\n</body>\n</html>\n"
    }

    /// A fragment id from `text`, unique among `taken`.
    public static func anchor(_ text: String, taken: [String]) -> String {
        let base =
            String(text.lowercased().map { $0.isLetter && $0.isASCII || $0.isNumber && $0.isASCII ? $0 : "-" })
            .split(separator: "-").joined(separator: "-")
        var candidate = base.isEmpty ? "section" : base
        var suffix = 2
        while taken.contains(candidate) {
            candidate = "\(base)-\(suffix)"
            suffix += 1
        }
        return candidate
    }

    static let style = """
        body{margin:0;background:#fff;color:#111;font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif}
        main{max-width:1100px;margin:0 auto;padding:16px 20px 48px}
        h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #bbb}
        h3{font-size:15px;margin:16px 0 6px}.subtitle{margin:0 0 12px;color:#333}
        nav ul{display:flex;flex-wrap:wrap;gap:4px 14px;padding:0;list-style:none;margin:8px 0}
        a{color:#0b3d91}.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0}
        .facts dt{font-weight:600}.facts dd{margin:0;overflow-wrap:anywhere}
        .scroll{overflow-x:auto}table{border-collapse:collapse;margin:6px 0 14px;font-size:12.5px}
        th,td{border:1px solid #bbb;padding:3px 7px;text-align:left;white-space:nowrap;vertical-align:top}
        thead th{background:#eee}tbody th{font-weight:500}caption{text-align:left;font-weight:600;padding:4px 0}
        .bad{font-weight:700;outline:2px solid #000;outline-offset:-3px}
        figure{margin:14px 0 22px}figcaption{font-size:12.5px;color:#333;max-width:820px}
        svg{max-width:100%;height:auto;display:block}details{margin:4px 0}summary{cursor:pointer;font-size:12.5px}
        pre{background:#f4f4f4;border:1px solid #ccc;padding:8px;overflow-x:auto;font-size:12px;line-height:1.35}
        pre.command{background:#fff;border:2px solid #000}.label{margin:8px 0 2px;font-weight:600;font-size:12.5px}
        .problem{border-left:4px solid #000;padding:2px 0 2px 12px;margin:14px 0}
        @media print{nav{display:none}details{display:block}}
        """
}
