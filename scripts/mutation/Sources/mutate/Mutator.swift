import SwiftOperators
import SwiftParser
import SwiftSyntax

/// One mutant: where it is, what it changes, and the id that turns it on at run time.
struct Mutant: Codable {
    let id: Int
    let file: String
    let line: Int
    /// `delete`, `swap`, `negate`, `relational`, `logical`, `boolean`, `unlock`.
    let operation: String
    /// The statement or expression as written (its first line).
    let original: String
    /// What the mutant does instead.
    let change: String
    /// The function it is in, with its first and last line: a build that fails there drops them.
    let function: String
    let functionLines: [Int]
}

/// Rewrites one source file into its mutant schema: every mutant present in the text, each behind
/// `__mutant(id)`, so one build holds them all. Edits never add a line, so a compiler error's line
/// names the mutant's line. Mutations stay inside the bodies of functions, accessors and closures
/// (never initializers, whose stored properties must all be set).
struct Mutator {
    let path: String
    let source: String
    var nextID: Int
    let excluded: Set<Int>
    private(set) var mutants: [Mutant] = []

    private struct Edit {
        let offset: Int
        let end: Int
        /// At one offset, lower ranks end up further left (a replacement first of all).
        let rank: Double
        let text: String
    }

    private var edits: [Edit] = []
    private let tree: Syntax
    private let lines: SourceLocationConverter

    init(path: String, source: String, firstID: Int, excluded: Set<Int>) {
        self.path = path
        self.source = source
        nextID = firstID
        self.excluded = excluded
        let parsed = Parser.parse(source: source)
        tree = OperatorTable.standardOperators.foldAll(parsed) { _ in }
        lines = SourceLocationConverter(fileName: path, tree: tree)
    }

    /// The mutated text.
    mutating func run() -> String {
        visit(tree)
        var bytes = Array(source.utf8)
        for edit in edits.sorted(by: { ($0.offset, $0.rank) > ($1.offset, $1.rank) }) {
            bytes.replaceSubrange(edit.offset..<edit.end, with: Array(edit.text.utf8))
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: Walking

    private mutating func visit(_ node: Syntax) {
        if let list = node.as(CodeBlockItemListSyntax.self), let function = enclosingBody(of: node) {
            statements(list, in: function)
        }
        if let condition = node.as(ConditionElementSyntax.self), enclosingBody(of: node) != nil,
            case .expression(let expression) = condition.condition
        {
            add("negate", at: Syntax(expression), change: "the condition negated") { id in
                [
                    Self.insert(before: Syntax(expression), "(", depth: Self.depth(of: node)),
                    Self.insert(after: Syntax(expression), ") != __mutant(\(id))", depth: Self.depth(of: node)),
                ]
            }
        }
        if let infix = node.as(InfixOperatorExprSyntax.self), enclosingBody(of: node) != nil {
            infixOperator(infix)
        }
        if let literal = node.as(BooleanLiteralExprSyntax.self), enclosingBody(of: node) != nil {
            let value = literal.literal.text
            let other = value == "true" ? "false" : "true"
            add("boolean", at: node, change: "\(value) → \(other)") { id in
                [Self.replace(Syntax(literal), "(__mutant(\(id)) ? \(other) : \(value))")]
            }
        }
        if let call = node.as(FunctionCallExprSyntax.self), enclosingBody(of: node) != nil, isQueueSync(call) {
            add("unlock", at: node, change: "the block run here, off the queue") { id in
                let closure = call.trailingClosure!.trimmedDescription
                return [Self.replace(Syntax(call), "(__mutant(\(id)) ? \(closure)() : \(call.trimmedDescription))")]
            }
            return  // nothing inside is mutated: the mutant copies the block
        }
        for child in node.children(viewMode: .sourceAccurate) { visit(child) }
    }

    /// Statement deletions and swaps of adjacent statements, composed into one guard per statement.
    private mutating func statements(_ list: CodeBlockItemListSyntax, in body: Syntax) {
        let items = Array(list)
        guard items.count >= 2 else { return }  // a single expression may be an implicit return
        let uninitialized = uninitializedLocals(in: body)
        var removers: [[Int]] = Array(repeating: [], count: items.count)
        var moved: [(after: Int, id: Int, text: String)] = []
        for (index, item) in items.enumerated() {
            if let deferred = item.item.as(DeferStmtSyntax.self) {
                add("delete", at: Syntax(item), change: "the defer removed") { id in
                    [
                        Self.insert(after: Syntax(deferred.body.leftBrace), " if !__mutant(\(id)) {", depth: Self.depth(of: Syntax(item))),
                        Self.insert(before: Syntax(deferred.body.rightBrace), "} ", depth: Self.depth(of: Syntax(item))),
                    ]
                }
                continue
            }
            guard deletable(item, uninitialized: uninitialized) else { continue }
            if let id = add("delete", at: Syntax(item), change: "the statement removed", { _ in [] }) {
                removers[index].append(id)
            }
            let next = index + 1
            if next < items.count, deletable(items[next], uninitialized: uninitialized), singleLine(item),
                singleLine(items[next]), !items[next].item.is(DeferStmtSyntax.self)
            {
                if let id = add("swap", at: Syntax(item), change: "moved after the next statement", { _ in [] }) {
                    removers[index].append(id)
                    moved.append((next, id, item.trimmedDescription))
                }
            }
        }
        for (index, item) in items.enumerated() where !removers[index].isEmpty {
            let ids = removers[index].map(String.init).joined(separator: ", ")
            edits.append(Self.insertion(before: Syntax(item), "if !__mutated(\(ids)) { ", rank: Double(Self.depth(of: Syntax(item)))))
            edits.append(Self.insertion(after: Syntax(item), " }", rank: -Double(Self.depth(of: Syntax(item)))))
        }
        for (after, id, text) in moved {
            let item = Syntax(items[after])
            edits.append(Self.insertion(after: item, "; if __mutant(\(id)) { \(text) }", rank: -Double(Self.depth(of: item)) + 0.5))
        }
    }

    private mutating func infixOperator(_ infix: InfixOperatorExprSyntax) {
        guard let op = infix.operator.as(BinaryOperatorExprSyntax.self) else { return }
        let text = op.operator.text
        if infix.leftOperand.is(NilLiteralExprSyntax.self) || infix.rightOperand.is(NilLiteralExprSyntax.self) { return }
        let node = Syntax(infix)
        let swaps = ["<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="]
        if let other = swaps[text] {
            let helper = text == "==" || text == "!=" ? "__equate" : "__compare"
            add("relational", at: node, change: "\(text) → \(other)") { id in
                [
                    Self.insert(before: Syntax(infix.leftOperand), "\(helper)(\(id), ", depth: Self.depth(of: node)),
                    Self.replace(Syntax(op.operator), ","),
                    Self.insert(after: Syntax(infix.rightOperand), ", (\(text)), (\(other)))", depth: Self.depth(of: node)),
                ]
            }
        } else if text == "&&" || text == "||" {
            let right = infix.rightOperand
            guard !contains(Syntax(right), where: { $0.is(AwaitExprSyntax.self) || $0.is(TryExprSyntax.self) }) else {
                return
            }
            add("logical", at: node, change: "\(text) → \(text == "&&" ? "||" : "&&")") { id in
                [
                    Self.insert(before: Syntax(infix.leftOperand), "__logical(\(id), ", depth: Self.depth(of: node)),
                    Self.replace(Syntax(op.operator), ","),
                    Self.insert(after: Syntax(right), ", \(text == "&&"))", depth: Self.depth(of: node)),
                ]
            }
        }
    }

    // MARK: What may be mutated

    /// A statement that can be removed and the code still compiles: no declaration, no exit.
    private func deletable(_ item: CodeBlockItemSyntax, uninitialized: Set<String>) -> Bool {
        switch item.item {
        case .decl: return false
        case .stmt(let statement):
            if statement.is(ReturnStmtSyntax.self) || statement.is(ThrowStmtSyntax.self)
                || statement.is(GuardStmtSyntax.self) || statement.is(BreakStmtSyntax.self)
                || statement.is(ContinueStmtSyntax.self) || statement.is(FallThroughStmtSyntax.self)
                || statement.is(DiscardStmtSyntax.self) || statement.is(DeferStmtSyntax.self)
            {
                return false
            }
        case .expr(let expression):
            if let call = expression.as(FunctionCallExprSyntax.self),
                let name = call.calledExpression.as(DeclReferenceExprSyntax.self)?.baseName.text,
                ["precondition", "preconditionFailure", "fatalError", "assert", "assertionFailure"].contains(name)
            {
                return false
            }
        }
        // No exit, and no first value of a local declared without one (the compiler proves it set).
        return !contains(Syntax(item)) { node in
            if node.is(ReturnStmtSyntax.self) || node.is(ThrowStmtSyntax.self) { return true }
            guard let assignment = node.as(InfixOperatorExprSyntax.self), assignment.operator.is(AssignmentExprSyntax.self),
                let name = assignment.leftOperand.as(DeclReferenceExprSyntax.self)?.baseName.text
            else { return false }
            return uninitialized.contains(name)
        } && !isAssignmentToUninitialized(item, uninitialized)
    }

    private func isAssignmentToUninitialized(_ item: CodeBlockItemSyntax, _ names: Set<String>) -> Bool {
        guard case .expr(let expression) = item.item, let assignment = expression.as(InfixOperatorExprSyntax.self),
            assignment.operator.is(AssignmentExprSyntax.self),
            let name = assignment.leftOperand.as(DeclReferenceExprSyntax.self)?.baseName.text
        else { return false }
        return names.contains(name)
    }

    /// Locals declared without a value, which a later statement must set before use.
    private func uninitializedLocals(in body: Syntax) -> Set<String> {
        var names = Set<String>()
        func walk(_ node: Syntax) {
            if let variable = node.as(VariableDeclSyntax.self) {
                for binding in variable.bindings where binding.initializer == nil {
                    if let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.text { names.insert(name) }
                }
            }
            for child in node.children(viewMode: .sourceAccurate) { walk(child) }
        }
        walk(body)
        return names
    }

    /// The body a node is in, if mutations may go there: a function's, an accessor's, a
    /// closure's, a deinitializer's — not an initializer's.
    private func enclosingBody(of node: Syntax) -> Syntax? {
        var current = node.parent
        while let parent = current {
            if parent.is(InitializerDeclSyntax.self) { return nil }
            if parent.is(FunctionDeclSyntax.self) || parent.is(AccessorDeclSyntax.self)
                || parent.is(DeinitializerDeclSyntax.self)
            {
                return parent
            }
            if parent.is(ClosureExprSyntax.self) {
                // A closure inside an initializer runs with everything set: mutate it, as its own body.
                return parent
            }
            if parent.is(PatternBindingSyntax.self) || parent.is(EnumCaseDeclSyntax.self) { return nil }
            current = parent.parent
        }
        return nil
    }

    private func isQueueSync(_ call: FunctionCallExprSyntax) -> Bool {
        guard let member = call.calledExpression.as(MemberAccessExprSyntax.self), member.declName.baseName.text == "sync",
            call.trailingClosure != nil
        else { return false }
        return singleLine(Syntax(call))
    }

    private func contains(_ node: Syntax, where predicate: (Syntax) -> Bool) -> Bool {
        for child in node.children(viewMode: .sourceAccurate) {
            if child.is(ClosureExprSyntax.self) || child.is(FunctionDeclSyntax.self) { continue }
            if predicate(child) || contains(child, where: predicate) { return true }
        }
        return false
    }

    private func singleLine(_ node: some SyntaxProtocol) -> Bool {
        line(of: node.positionAfterSkippingLeadingTrivia) == line(of: node.endPositionBeforeTrailingTrivia)
    }

    private static func depth(of node: Syntax) -> Int {
        var depth = 0
        var current = node.parent
        while let parent = current {
            depth += 1
            current = parent.parent
        }
        return depth
    }

    // MARK: Edits and the manifest

    /// Records a mutant at `node` and its edits; `nil` (and no edits) when it is excluded.
    @discardableResult
    private mutating func add(_ operation: String, at node: Syntax, change: String, _ makeEdits: (Int) -> [Edit]) -> Int? {
        let id = nextID
        nextID += 1
        guard !excluded.contains(id) else { return nil }
        edits += makeEdits(id)
        let function = functionName(of: node)
        mutants.append(
            Mutant(
                id: id, file: path, line: line(of: node.positionAfterSkippingLeadingTrivia), operation: operation,
                original: String(node.trimmedDescription.split(separator: "\n").first ?? "").trimmingCharacters(),
                change: change, function: function.name, functionLines: function.lines))
        return id
    }

    private func functionName(of node: Syntax) -> (name: String, lines: [Int]) {
        var current = node.parent
        while let parent = current {
            let range = [
                line(of: parent.positionAfterSkippingLeadingTrivia), line(of: parent.endPositionBeforeTrailingTrivia),
            ]
            if let function = parent.as(FunctionDeclSyntax.self) { return (function.name.text, range) }
            if parent.is(AccessorDeclSyntax.self) || parent.is(DeinitializerDeclSyntax.self) {
                return ("accessor", range)
            }
            if let variable = parent.as(VariableDeclSyntax.self) {
                return (variable.bindings.first?.pattern.trimmedDescription ?? "property", range)
            }
            current = parent.parent
        }
        return ("?", [0, 0])
    }

    private func line(of position: AbsolutePosition) -> Int { lines.location(for: position).line }

    private static func insert(before node: Syntax, _ text: String, depth: Int) -> Edit {
        Self.insertion(before: node, text, rank: Double(depth))
    }

    private static func insert(after node: Syntax, _ text: String, depth: Int) -> Edit {
        Self.insertion(after: node, text, rank: -Double(depth))
    }

    private static func insertion(before node: Syntax, _ text: String, rank: Double) -> Edit {
        let offset = node.positionAfterSkippingLeadingTrivia.utf8Offset
        return Edit(offset: offset, end: offset, rank: rank, text: text)
    }

    private static func insertion(after node: Syntax, _ text: String, rank: Double) -> Edit {
        let offset = node.endPositionBeforeTrailingTrivia.utf8Offset
        return Edit(offset: offset, end: offset, rank: rank, text: text)
    }

    private static func replace(_ node: Syntax, _ text: String) -> Edit {
        // Before any insertion at its start, which must stay to its left.
        Edit(
            offset: node.positionAfterSkippingLeadingTrivia.utf8Offset,
            end: node.endPositionBeforeTrailingTrivia.utf8Offset, rank: .infinity, text: text)
    }
}

extension String {
    func trimmingCharacters() -> String {
        var text = Substring(self)
        while text.first?.isWhitespace == true { text.removeFirst() }
        while text.last?.isWhitespace == true { text.removeLast() }
        return String(text)
    }
}
