"""Completeness rules for openapi.yaml that a schema validator does not check (scripts/test-system spec).

Every operation: an operationId, a tag, a summary, and its security stated (a scope per keyed operation, or an
explicit empty list). Every response: an X-Request-Id header and, for JSON, an example. Every error response:
the Error schema. Every 503 and 429: Retry-After. Every parameter and JSON request body: a schema, and a
request body an example. Every example valid against its schema.

And the shape generators rely on (openapi-python-client, datamodel-code-generator), over every mapping of the
document: no key whose value is null outside example data (a ", " inside `{ }`, or a ": " or " #", in an
unquoted YAML scalar cuts it short and leaves such a key behind); in every schema object, only JSON Schema and
OpenAPI keywords; no `enum` that lists null (a nullable enum is a named enum schema in an `anyOf` with
`{type: "null"}`, or generators emit one class per use); every header's schema a named schema or a typed one.

Prints one line per problem; exits 1 when there is any.
"""

import sys

import jsonschema
import yaml

METHODS = ("get", "put", "post", "delete", "patch")


def resolve(document, node):
    while isinstance(node, dict) and "$ref" in node:
        target = document
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target[part]
        node = target
    return node


def has_example(document, media):
    if "example" in media or "examples" in media:
        return True
    schema = resolve(document, media.get("schema", {}))
    return "example" in schema or "examples" in schema


def examples_of(document, media):
    """The JSON examples of a media object and of its schema."""
    found = []
    if "example" in media:
        found.append(media["example"])
    for example in media.get("examples", {}).values():
        example = resolve(document, example)
        if "value" in example:
            found.append(example["value"])
    schema = resolve(document, media.get("schema", {}))
    found.extend(schema.get("examples", []))
    return found


def invalid_examples(document, media):
    """Messages for the examples of a JSON media object that its schema refuses."""
    root = dict(media.get("schema", {}))
    root["components"] = document["components"]
    validator = jsonschema.Draft202012Validator(root, format_checker=jsonschema.FormatChecker())
    return [error.message[:160] for example in examples_of(document, media) for error in validator.iter_errors(example)]


# The keywords a schema object may have: JSON Schema 2020-12 (core, applicator, validation, meta-data, format,
# content, unevaluated) plus OpenAPI 3.1's own.
SCHEMA_KEYWORDS = {
    "$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$defs", "$comment", "$vocabulary",
    "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "prefixItems", "items",
    "contains", "properties", "patternProperties", "additionalProperties", "propertyNames",
    "unevaluatedItems", "unevaluatedProperties", "type", "enum", "const", "multipleOf", "maximum",
    "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems",
    "minItems", "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties", "required",
    "dependentRequired", "title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
    "format", "contentEncoding", "contentMediaType", "contentSchema",
    "discriminator", "xml", "externalDocs", "example",
}
# Keys whose values are data (examples, defaults, constants), where null is a value like any other.
DATA_KEYS = {"example", "examples", "default", "const", "enum", "value"}
# Schema keywords whose value is one schema, a list of schemas, or a map of name to schema.
ONE_SCHEMA = {"not", "if", "then", "else", "items", "contains", "additionalProperties", "propertyNames",
              "unevaluatedItems", "unevaluatedProperties", "contentSchema"}
SCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems"}
SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "dependentSchemas"}


def null_keys(node, where, problems):
    """Every key with a null value in a mapping outside example data."""
    if isinstance(node, dict):
        for key, value in node.items():
            if value is None and key not in DATA_KEYS:
                problems.append(
                    f"{where}: key {key!r} has no value (a plain scalar cut short by ', ' in {{ }}, ': ' or ' #'?)")
            elif key not in DATA_KEYS:
                null_keys(value, f"{where}/{key}", problems)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            null_keys(item, f"{where}/{index}", problems)


def schema_problems(schema, where, problems):
    """Unknown keywords and enums listing null, in a schema and every schema inside it."""
    if not isinstance(schema, dict):
        return
    for key in schema:
        if key not in SCHEMA_KEYWORDS and not str(key).startswith("x-"):
            problems.append(f"{where}: {key!r} is not a schema keyword")
    if isinstance(schema.get("enum"), list) and None in schema["enum"]:
        problems.append(f"{where}: an enum lists null; use anyOf with a named enum schema and {{type: \"null\"}}")
    for key in ONE_SCHEMA & schema.keys():
        schema_problems(schema[key], f"{where}/{key}", problems)
    for key in SCHEMA_LISTS & schema.keys():
        for index, item in enumerate(schema[key] or []):
            schema_problems(item, f"{where}/{key}/{index}", problems)
    for key in SCHEMA_MAPS & schema.keys():
        for name, item in (schema[key] or {}).items():
            schema_problems(item, f"{where}/{key}/{name}", problems)


def every_schema(node, where, found):
    """(where, schema) for every `schema` member of a non-schema object (parameters, headers, media types)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "schema" and isinstance(value, dict):
                found.append((f"{where}/schema", value))
            elif key not in DATA_KEYS and not (where == "#/components" and key == "schemas"):
                every_schema(value, f"{where}/{key}", found)
    elif isinstance(node, list):
        for index, item in enumerate(node):
            every_schema(item, f"{where}/{index}", found)


def shape_problems(document):
    """The rules generators rely on, over the whole document."""
    problems = []
    null_keys(document, "#", problems)
    schemas = [(f"#/components/schemas/{name}", schema) for name, schema in document["components"]["schemas"].items()]
    every_schema(document, "#", schemas)
    for where, schema in schemas:
        schema_problems(schema, where, problems)
    for name, header in document["components"].get("headers", {}).items():
        schema = header.get("schema", {})
        if "$ref" not in schema and "type" not in schema:
            problems.append(f"#/components/headers/{name}: the schema is neither a named schema nor typed")
    return problems


def audit(document):
    problems = shape_problems(document)
    for path, item in document["paths"].items():
        for method in METHODS:
            if method not in item:
                continue
            operation = item[method]
            where = f"{method.upper()} {path}"
            for field in ("operationId", "tags", "summary", "responses"):
                if not operation.get(field):
                    problems.append(f"{where}: no {field}")
            security = operation.get("security", document.get("security"))
            if security is None:
                problems.append(f"{where}: security not stated")
            elif security and not all(scopes for requirement in security for scopes in requirement.values()):
                problems.append(f"{where}: a keyed operation must name its scope")
            for parameter in operation.get("parameters", []) + item.get("parameters", []):
                parameter = resolve(document, parameter)
                if "schema" not in parameter:
                    problems.append(f"{where}: parameter {parameter.get('name')} has no schema")
            body = resolve(document, operation.get("requestBody", {}))
            for media_type, media in body.get("content", {}).items():
                if "schema" not in media:
                    problems.append(f"{where}: request body {media_type} has no schema")
                if media_type == "application/json" and not has_example(document, media):
                    problems.append(f"{where}: request body has no example")
                if media_type == "application/json":
                    problems.extend(f"{where}: request example: {message}" for message in invalid_examples(document, media))
            for status, response in operation.get("responses", {}).items():
                response = resolve(document, response)
                headers = response.get("headers", {})
                if "X-Request-Id" not in headers:
                    problems.append(f"{where} {status}: no X-Request-Id header")
                if status in ("429", "503") and "Retry-After" not in headers:
                    problems.append(f"{where} {status}: no Retry-After header")
                for media_type, media in response.get("content", {}).items():
                    if "schema" not in media:
                        problems.append(f"{where} {status} {media_type}: no schema")
                    if media_type == "application/json" and not has_example(document, media):
                        problems.append(f"{where} {status}: no example")
                    if media_type == "application/json":
                        problems.extend(f"{where} {status}: example: {message}" for message in invalid_examples(document, media))
                    if status[0] in "45" and media_type == "application/json":
                        if media.get("schema", {}).get("$ref") != "#/components/schemas/Error":
                            problems.append(f"{where} {status}: error responses use the Error schema")
    return problems


def main():
    with open(sys.argv[1] if len(sys.argv) > 1 else "openapi.yaml", encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    problems = audit(document)
    operations = sum(1 for item in document["paths"].values() for method in METHODS if method in item)
    for problem in problems:
        print(problem)
    print(f"{operations} operations audited, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
