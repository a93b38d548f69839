"""Completeness rules for openapi.yaml that a schema validator does not check (scripts/test-system spec).

Every operation: an operationId, a tag, a summary, and its security stated (a scope per keyed operation, or an
explicit empty list). Every response: an X-Request-Id header and, for JSON, an example. Every error response:
the Error schema. Every 503 and 429: Retry-After. Every parameter and JSON request body: a schema, and a
request body an example. Every example valid against its schema. Prints one line per problem; exits 1 when
there is any.
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


def audit(document):
    problems = []
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
