import Foundation
import Testing

/// The published schemas and documentation samples under Fixtures/Exports, loaded for any test
/// that needs to prove an export conforms (see Fixtures/Exports/README.md for their sources).
enum ExportFixtures {
    static var directory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/Exports")
    }

    static func data(_ relativePath: String) throws -> Data {
        try Data(contentsOf: directory.appendingPathComponent(relativePath))
    }

    /// Bencher Metric Format (BMF), as published by bencher.dev.
    static func bencher() throws -> JSONSchemaSubset {
        try JSONSchemaSubset(schema: data("bencher/bmf.schema.json"))
    }

    /// github-action-benchmark's customBiggerIsBetter / customSmallerIsBetter input.
    static func githubActionBenchmark() throws -> JSONSchemaSubset {
        try JSONSchemaSubset(schema: data("github-action-benchmark/custom.schema.json"))
    }

    /// JUnit XML as Jenkins xunit-plugin's junit-10.xsd accepts it.
    static func junit() throws -> XSDSubset {
        try XSDSubset(xsd: data("junit/junit-10.xsd"))
    }
}

@Suite("Export formats: published schemas accept their samples and reject broken documents")
struct ExportSchemaTests {
    private static func json(_ text: String) -> Data { Data(text.utf8) }

    @Test(
        "every documentation sample validates",
        arguments: [
            "bencher/bmf-example.json", "github-action-benchmark/readme-example.json",
            "github-action-benchmark/customSmallerIsBetter_output.json",
            "github-action-benchmark/customBiggerIsBetter_output.json",
            "junit/sample-surefire3-flaky.xml", "junit/sample-nested-suites-error.xml",
        ])
    func samplesValidate(path: String) throws {
        let document = try ExportFixtures.data(path)
        if path.hasPrefix("junit/") {
            #expect(try ExportFixtures.junit().errors(in: document) == [])
        } else {
            let schema =
                path.hasPrefix("bencher/") ? try ExportFixtures.bencher() : try ExportFixtures.githubActionBenchmark()
            #expect(try schema.errors(in: document) == [])
        }
    }

    @Test func bencherRejectsAMeasureWithoutValue() throws {
        let document = Self.json(#"{"benchmark_name": {"latency": {"lower_value": 1}}}"#)
        let errors = try ExportFixtures.bencher().errors(in: document)
        #expect(errors == [#"/benchmark_name/latency: missing required "value""#])
    }

    @Test func bencherRejectsAStringValue() throws {
        let document = Self.json(#"{"/bin/sh -c x": {"build-time": {"value": "87.0"}}}"#)
        let errors = try ExportFixtures.bencher().errors(in: document)
        #expect(errors == ["/~1bin~1sh -c x/build-time/value: expected number, found string"])
    }

    @Test func githubActionBenchmarkRejectsAnEntryWithoutUnit() throws {
        let document = Self.json(#"[{"name": "a", "value": 1}]"#)
        let errors = try ExportFixtures.githubActionBenchmark().errors(in: document)
        #expect(errors == [#"/0: missing required "unit""#])
    }

    @Test func githubActionBenchmarkRejectsAStringValue() throws {
        let document = Self.json(
            #"[{"name": "a", "unit": "ns", "value": 1}, {"name": "b", "unit": "ns", "value": "12"}]"#)
        #expect(
            try ExportFixtures.githubActionBenchmark().errors(in: document) == [
                "/1/value: expected number, found string"
            ])
    }

    @Test func githubActionBenchmarkRejectsAnObjectAtTopLevel() throws {
        let document = Self.json(#"{"name": "a", "unit": "ns", "value": 1}"#)
        let errors = try ExportFixtures.githubActionBenchmark().errors(in: document)
        #expect(errors == ["/: expected array, found object"])
    }

    private static let suite = """
        <?xml version="1.0" encoding="UTF-8"?>
        <testsuite name="S" tests="2" failures="1" errors="0" skipped="1" time="1.250">
          <properties><property name="os" value="linux"/></properties>
          <testcase name="a" classname="C" time="0.5"><failure message="m" type="T">trace</failure></testcase>
          <testcase name="b" classname="C"><skipped/><system-out>out</system-out></testcase>
          <system-out>suite out</system-out>
        </testsuite>
        """

    /// `suite` with one substitution; proves the unchanged base document is valid.
    private static func junitErrors(replacing old: String, with new: String) throws -> [String] {
        let junit = try ExportFixtures.junit()
        #expect(try junit.errors(in: Data(suite.utf8)) == [])
        #expect(suite.contains(old))
        return try junit.errors(in: Data(suite.replacingOccurrences(of: old, with: new).utf8))
    }

    @Test func junitRejectsATestcaseWithoutName() throws {
        let errors = try Self.junitErrors(replacing: #"<testcase name="b" "#, with: "<testcase ")
        #expect(errors == [#"/testsuite/testcase[2]: missing required attribute "name""#])
    }

    @Test func junitRejectsATestsuiteWithoutTests() throws {
        #expect(
            try Self.junitErrors(replacing: #" tests="2""#, with: "") == [
                #"/testsuite: missing required attribute "tests""#
            ])
    }

    @Test func junitRejectsAnUndeclaredTestcaseAttribute() throws {
        #expect(
            try Self.junitErrors(replacing: #"<testcase name="a""#, with: #"<testcase flaky="no" name="a""#) == [
                #"/testsuite/testcase[1]: undeclared attribute "flaky""#
            ])
    }

    @Test func junitRejectsASuffixedSuiteTime() throws {
        #expect(
            try Self.junitErrors(replacing: #"time="1.250""#, with: #"time="1.2s""#) == [
                #"/testsuite: attribute "time" value "1.2s" does not match the pattern of SUREFIRE_TIME"#
            ])
    }

    @Test func junitRejectsAnUnknownChildElement() throws {
        let errors = try Self.junitErrors(replacing: "<skipped/>", with: "<skipped/><ignored/>")
        #expect(errors.count == 1)
        #expect(errors.first?.hasPrefix("/testsuite/testcase[2]: element <ignored> is not allowed here") == true)
    }

    @Test func junitRejectsTextInsideProperties() throws {
        #expect(
            try Self.junitErrors(replacing: "<properties>", with: "<properties>os=linux") == [
                "/testsuite/properties[1]: text content in an element that is not mixed"
            ])
    }

    @Test func junitRejectsAnUndeclaredRootAndChildrenOfSimpleElements() throws {
        let junit = try ExportFixtures.junit()
        #expect(
            try junit.errors(in: Data("<testrun/>".utf8)) == [
                "/testrun: the root element <testrun> is not declared by the schema"
            ])
        let nested = Self.suite.replacingOccurrences(of: "<system-out>out", with: "<system-out><b>out</b>")
        #expect(
            try junit.errors(in: Data(nested.utf8)) == [
                "/testsuite/testcase[2]/system-out[1]: child element <b> in an element of simple type"
            ])
    }

    @Test(arguments: ["", "<testsuite", "<testsuite><testcase></testsuite>", "<testsuite/><testsuite/>", "<a><b>"])
    func malformedXMLThrows(document: String) throws {
        let junit = try ExportFixtures.junit()
        #expect(throws: XSDSubset.Failure.self) { try junit.errors(in: Data(document.utf8)) }
    }

    @Test(arguments: ["", "{", #"[{"value": 1}"#, "[1,]", #"[{"name": "a", "unit": "s", "value": 1, }]"#])
    func malformedJSONThrows(document: String) throws {
        let schema = try ExportFixtures.githubActionBenchmark()
        #expect(throws: JSONSchemaSubset.Failure.self) { try schema.errors(in: Data(document.utf8)) }
    }

    @Test func unsupportedSchemaKeywordIsRefused() {
        let schema = Self.json(#"{"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}}"#)
        let error = #expect(throws: JSONSchemaSubset.Failure.self) { try JSONSchemaSubset(schema: schema) }
        #expect(error?.description == #"unsupported keyword "oneOf" at #/properties/a"#)
    }

    @Test func unsupportedXSDConstructIsRefused() throws {
        let xsd = try String(decoding: ExportFixtures.data("junit/junit-10.xsd"), as: UTF8.self)
            .replacingOccurrences(of: #"<xs:element ref="property""#, with: #"<xs:any/><xs:element ref="property""#)
        let error = #expect(throws: XSDSubset.Failure.self) { try XSDSubset(xsd: Data(xsd.utf8)) }
        #expect(error?.description.contains("<xs:any>") == true)
    }
}

@Suite("JSONSchemaSubset: each supported keyword, and booleans told apart from numbers")
struct JSONSchemaSubsetTests {
    @Test(arguments: [
        (#"{"type": "number"}"#, "true", ["/: expected number, found boolean"]),
        (#"{"type": "number"}"#, "1", []),
        (#"{"type": "boolean"}"#, "1", ["/: expected boolean, found number"]),
        (#"{"type": "boolean"}"#, "0", ["/: expected boolean, found number"]),
        (#"{"type": "boolean"}"#, "false", []),
        (
            #"{"items": {"type": "number"}}"#, "[true, 0, 1, 2.5, false]",
            [
                "/0: expected number, found boolean", "/4: expected number, found boolean",
            ]
        ),
        (#"{"type": "integer"}"#, "2.0", []),
        (#"{"type": "integer"}"#, "-7", []),
        (#"{"type": "integer"}"#, "2.5", ["/: expected integer, found number"]),
        (#"{"type": ["string", "null"]}"#, "null", []),
        (#"{"type": ["string", "null"]}"#, "{}", ["/: expected string or null, found object"]),
        (
            #"{"patternProperties": {"b": {"type": "string"}}}"#, #"{"abc": 1, "x": 1}"#,
            [
                "/abc: expected string, found number"
            ]
        ),
        (
            #"{"properties": {"a": {}}, "patternProperties": {"^x": {}}, "additionalProperties": false}"#,
            #"{"a": 1, "xy": 2, "b": 3}"#, ["/b: property not allowed (additionalProperties is false)"]
        ),
        (
            #"{"properties": {"a": {}}, "additionalProperties": {"type": "number"}}"#, #"{"a": "s", "c": true}"#,
            [
                "/c: expected number, found boolean"
            ]
        ),
        (
            #"{"type": "array", "minItems": 2, "items": {"type": "integer", "minimum": 0}}"#, "[-1]",
            [
                "/: expected at least 2 items, found 1", "/0: -1 is less than the minimum 0",
            ]
        ),
        (
            #"{"required": ["a~b"], "properties": {"a/b": {"type": "string"}}}"#, #"{"a/b": 1}"#,
            [
                #"/: missing required "a~b""#, "/a~1b: expected string, found number",
            ]
        ),
    ])
    func keyword(schema: String, document: String, expected: [String]) throws {
        let validator = try JSONSchemaSubset(schema: Data(schema.utf8))
        #expect(try validator.errors(in: Data(document.utf8)) == expected)
    }

    @Test(arguments: [##"{"$ref": "#"}"##, #"{"items": [{}]}"#, #"{"type": "float"}"#, #"{"minItems": -1}"#, "true"])
    func unsupportedSchemasAreRefused(schema: String) {
        #expect(throws: JSONSchemaSubset.Failure.self) { try JSONSchemaSubset(schema: Data(schema.utf8)) }
    }
}
