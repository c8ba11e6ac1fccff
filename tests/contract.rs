//! The contract is the single source: every generated artefact equals what
//! `shared/contract/tools.json` produces, an edited artefact is caught, the
//! contract's argument names are exactly the ones the validators accept,
//! and its error table is exactly the library's.
//!
//! No database is needed: the scoped operations are probed with arguments
//! that fail validation or carry a malformed scope id, which they refuse
//! before touching the pool.

use mosaic::catalog::AVAILABILITY;
use mosaic::contract::{self, AGENTCORE_KEYWORDS};
use mosaic::error::Code;
use mosaic::search::request::FILTER_FIELDS;
use mosaic::search::{SearchRequest, Shape};
use mosaic::{Ctx, Error, Principal, RetrievalProfile};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn op(name: &str) -> &'static contract::OperationSpec {
    contract::operation(name).unwrap_or_else(|| panic!("the contract defines {name}"))
}

fn properties(name: &str) -> BTreeSet<String> {
    op(name).input_schema["properties"]
        .as_object()
        .expect("an input schema has properties")
        .keys()
        .cloned()
        .collect()
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The entries of a `const NAME: &[&str] = &[...]` list in a source file.
/// The validators keep these lists private; reading the committed source
/// compares against the list itself rather than a copy of it.
fn const_list(src: &str, name: &str) -> BTreeSet<String> {
    let start = src
        .find(&format!("const {name}: &[&str] = &["))
        .unwrap_or_else(|| panic!("the source declares `const {name}`"));
    let rest = &src[start..];
    let end = rest.find("];").expect("the list is closed");
    rest[..end]
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

// -------------------------------------------------------------------- drift

#[test]
fn every_committed_generated_file_equals_what_the_contract_produces() {
    let root = repo_root();
    for (path, want) in contract::generated_files() {
        let have = std::fs::read_to_string(root.join(path))
            .unwrap_or_else(|e| panic!("{path}: {e}; run `mosaic contract generate`"));
        assert!(
            have == want,
            "{path} differs from the contract; run `mosaic contract generate`"
        );
    }
    assert_eq!(contract::drifted(&root), Vec::<String>::new());
}

/// A throw-away copy of the generated files, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn with_generated_files() -> Self {
        let dir = std::env::temp_dir().join(format!(
            "mosaic-contract-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, content) in contract::generated_files() {
            let file = dir.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, content).unwrap();
        }
        Scratch(dir)
    }

    fn edit(&self, path: &str, f: impl FnOnce(String) -> String) {
        let file = self.0.join(path);
        let s = std::fs::read_to_string(&file).unwrap();
        std::fs::write(file, f(s)).unwrap();
    }

    fn root(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn the_drift_check_reports_an_edited_generated_file() {
    for (path, _) in contract::generated_files() {
        let scratch = Scratch::with_generated_files();
        assert!(contract::drifted(scratch.root()).is_empty(), "fresh copy");
        // In SKILL.md only the table is generated; edit a table row.
        scratch.edit(path, |s| {
            s.replacen("| `search_products` |", "| `search_product` |", 1)
                .replacen("\"search_products\"", "\"search_product\"", 1)
                .replacen("## `search_products`", "## `search_product`", 1)
        });
        assert_eq!(contract::drifted(scratch.root()), vec![path.to_string()]);
    }

    // A missing file is drift too.
    let scratch = Scratch::with_generated_files();
    std::fs::remove_file(scratch.root().join(contract::OPENAPI_JSON)).unwrap();
    assert_eq!(
        contract::drifted(scratch.root()),
        vec![contract::OPENAPI_JSON.to_string()]
    );

    // In SKILL.md only the table is generated: prose edits are not drift,
    // a hand edit of the table (or losing the markers) is.
    let scratch = Scratch::with_generated_files();
    scratch.edit(contract::SKILL_MD, |s| {
        s.replacen("# Mosaic Hybrid Retrieval", "# Mosaic Hybrid Retrieval!", 1)
    });
    assert!(contract::drifted(scratch.root()).is_empty());
    scratch.edit(contract::SKILL_MD, |s| {
        s.replacen("| yes |\n", "| no |\n", 1)
    });
    assert_eq!(
        contract::drifted(scratch.root()),
        vec![contract::SKILL_MD.to_string()]
    );
    let scratch = Scratch::with_generated_files();
    scratch.edit(contract::SKILL_MD, |s| {
        s.replace(contract::END_OPERATIONS, "")
    });
    assert_eq!(
        contract::drifted(scratch.root()),
        vec![contract::SKILL_MD.to_string()]
    );
}

// ------------------------------------------------------- argument names

#[test]
fn search_arguments_are_exactly_what_the_request_validator_accepts() {
    let top = const_list(
        include_str!("../shared/src/search/request.rs"),
        "TOP_FIELDS",
    );
    let filters = names(FILTER_FIELDS);
    let accepted: BTreeSet<String> = top.union(&filters).cloned().collect();
    assert_eq!(properties("search_products"), accepted);

    // The HTTP map nests exactly the filter fields under `filters`.
    let nested: BTreeSet<String> = contract::argument_locations(op("search_products"))
        .into_iter()
        .filter(|(_, place, _)| *place == "body.filters")
        .map(|(arg, _, _)| arg.to_string())
        .collect();
    assert_eq!(nested, filters);

    // The contract's availability values are the catalog's.
    let schema = &op("search_products").input_schema["properties"]["availability"];
    for branch in schema["anyOf"].as_array().unwrap() {
        let values = branch["enum"]
            .as_array()
            .or_else(|| branch["items"]["enum"].as_array())
            .unwrap();
        let values: Vec<&str> = values.iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(values, AVAILABILITY);
    }
}

/// A valid value for every search argument (flat shape).
fn search_example() -> Map<String, Value> {
    json!({
        "query": "kettle", "domain": "kitchen", "category_key": "kettles", "brand": "Acme",
        "availability": ["in_stock", "low_stock"], "in_stock_only": true,
        "min_price_cents": 100, "max_price_cents": 9000, "min_rating": 3.5,
        "attributes": {"capacity_l": 1.7, "cordless": true},
        "limit": 50, "authorized_limit": 5, "include_diagnostics": true, "rerank": false,
        "session_id": "s-1",
    })
    .as_object()
    .unwrap()
    .clone()
}

#[test]
fn the_validator_accepts_every_contract_argument_and_the_contract_bounds() {
    let profile = RetrievalProfile::default();
    let flat = Value::Object(search_example());
    assert_eq!(
        properties("search_products"),
        search_example().keys().cloned().collect()
    );
    let parsed = SearchRequest::from_json(&flat, Shape::Flat, &profile).unwrap();

    // The same logical arguments, mapped to HTTP by the contract, parse to
    // the same request.
    let (_, body) = contract::http_request(op("search_products"), &search_example());
    let nested = SearchRequest::from_json(&body.unwrap(), Shape::Nested, &profile).unwrap();
    assert_eq!(parsed, nested);

    // Numeric bounds in the schema are the validator's bounds.
    let props = op("search_products").input_schema["properties"]
        .as_object()
        .unwrap();
    for (name, schema) in props {
        let Some(max) = schema["maximum"].as_f64() else {
            continue;
        };
        let min = schema["minimum"].as_f64().unwrap();
        let mut args = json!({"query": "kettle", "limit": 50});
        for (v, ok) in [
            (min, true),
            (max, true),
            (min - 1.0, false),
            (max + 1.0, false),
        ] {
            args[name.as_str()] = json!(v as i64);
            let r = SearchRequest::from_json(&args, Shape::Flat, &profile);
            match (ok, r) {
                (true, Ok(_)) => {}
                (false, Err(e)) => {
                    assert_eq!(e.code(), Code::InvalidArgument, "{name}={v}");
                    assert_eq!(e.body()["error"]["field"], name.as_str(), "{name}={v}");
                }
                (ok, r) => panic!("{name}={v}: expected ok={ok}, got {r:?}"),
            }
        }
    }
}

/// The contract's pattern for "some text" (a search's query, an evidence
/// question) is what the validator calls text: a string whose whitespace
/// and invisible characters alone normalise to nothing is refused by both,
/// one with a visible character passes both.
#[test]
fn the_text_patterns_are_what_the_validator_calls_text() {
    let search = &op("search_products").input_schema;
    let branch = search["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["required"] == json!(["query"]))
        .unwrap();
    let query = branch["properties"]["query"]["pattern"].as_str().unwrap();
    let question = op("get_product_evidence").input_schema["properties"]["evidence_query"]
        ["pattern"]
        .as_str()
        .unwrap();
    assert_eq!(query, question);
    // A filter string counts as a filter on the same terms (the validator
    // reads one without a visible character as no filter).
    for key in ["domain", "category_key", "brand"] {
        let branch = search["anyOf"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["required"] == json!([key]))
            .unwrap();
        assert_eq!(branch["properties"][key]["pattern"], query, "{key}");
    }
    // Spelled out, without `\s`, whose meaning differs between the
    // regex engines of clients (ECMA-262) and this test.
    assert!(!query.contains("\\s") && !query.contains("\\S"), "{query}");
    let pattern = regex::Regex::new(query).unwrap();
    for s in [
        "kettle",
        "漢",
        "🙂",
        "a\u{200C}",
        "\u{202E}x",
        " ",
        "\t\r\n",
        "\u{3000}",
        "\u{200B}",
        "\u{200B} \u{2060}\u{200D}",
        "\u{200C}",
        "\u{FEFF}",
        "\u{00AD}",
        "\u{061C}",
        "\u{2066}\u{2069}",
        "\u{0085}",
        "\u{1680}\u{202F}\u{205F}",
        "\u{2028}\u{2029}",
        "\u{00A0}x",
    ] {
        let text = !mosaic::search::request::normalize_query(s).is_empty();
        assert_eq!(pattern.is_match(s), text, "{s:?}");
    }
}

/// A context whose database does not exist: the probes below are refused
/// before any connection is made.
fn offline_ctx() -> Ctx {
    Ctx::from_url(
        "postgres://nobody@127.0.0.1:1/none",
        1,
        RetrievalProfile::default(),
    )
    .unwrap()
}

async fn call(name: &str, args: &Value) -> Result<Value, Error> {
    let ctx = offline_ctx();
    let who = Principal::anonymous();
    match name {
        "get_product_evidence" => mosaic::scope::get_product_evidence(&ctx, &who, args).await,
        "compare_products" => mosaic::scope::compare_products(&ctx, &who, args).await,
        "explain_retrieval" => mosaic::scope::explain_retrieval(&ctx, &who, args).await,
        _ => unreachable!("{name}"),
    }
}

#[tokio::test]
async fn scoped_arguments_are_exactly_what_scope_accepts() {
    let sources = [
        (
            "get_product_evidence",
            include_str!("../shared/src/scope/evidence.rs"),
            json!({"retrieval_scope_id": "not-a-uuid", "product_id": "P1",
                   "evidence_query": "is it quiet?", "limit": 20}),
        ),
        (
            "compare_products",
            include_str!("../shared/src/scope/compare.rs"),
            json!({"retrieval_scope_id": "not-a-uuid",
                   "product_ids": ["P1", "P2", "P3", "P4", "P5"]}),
        ),
        (
            "explain_retrieval",
            include_str!("../shared/src/scope/explain.rs"),
            json!({"retrieval_scope_id": "not-a-uuid"}),
        ),
    ];
    for (name, src, example) in sources {
        assert_eq!(properties(name), const_list(src, "FIELDS"), "{name}");
        assert_eq!(
            properties(name),
            example.as_object().unwrap().keys().cloned().collect(),
            "{name}: the probe sets every argument"
        );

        // Every contract argument (at the contract's bounds) passes
        // validation: the malformed scope id is then refused as a miss.
        let e = call(name, &example).await.unwrap_err();
        assert_eq!(e.code(), Code::NotFound, "{name}: {e:?}");

        // Anything else is an unknown field.
        let mut extra = example.clone();
        extra["bogus"] = json!(1);
        let e = call(name, &extra).await.unwrap_err();
        assert_eq!(e.code(), Code::UnknownField, "{name}");
        assert_eq!(e.body()["error"]["field"], "bogus");

        // Every contract-required argument is required by the operation.
        for req in op(name).input_schema["required"].as_array().unwrap() {
            let req = req.as_str().unwrap();
            let mut args = example.clone();
            args.as_object_mut().unwrap().remove(req);
            let e = call(name, &args).await.unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument, "{name} without {req}");
            assert_eq!(e.body()["error"]["field"], req, "{name} without {req}");
        }
    }

    // One past the contract's bounds is refused.
    let over = json!({"retrieval_scope_id": "x", "product_id": "P1",
                      "evidence_query": "q", "limit": 21});
    let e = call("get_product_evidence", &over).await.unwrap_err();
    assert_eq!(e.body()["error"]["field"], "limit");
    let over = json!({"retrieval_scope_id": "x",
                      "product_ids": ["P1", "P2", "P3", "P4", "P5", "P6"]});
    let e = call("compare_products", &over).await.unwrap_err();
    assert_eq!(e.body()["error"]["field"], "product_ids");
}

#[test]
fn every_operation_maps_each_argument_to_one_http_location() {
    for o in contract::operations() {
        let name = o.name.as_str();
        let schema = &o.input_schema;
        assert_eq!(schema["additionalProperties"], false, "{name}");
        assert_eq!(
            schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
        );
        let mapped: Vec<&str> = contract::argument_locations(o)
            .iter()
            .map(|(a, _, _)| *a)
            .collect();
        assert_eq!(
            mapped
                .iter()
                .map(|a| a.to_string())
                .collect::<BTreeSet<_>>(),
            properties(name),
            "{name}: every argument is mapped once"
        );
        assert_eq!(
            mapped.len(),
            properties(name).len(),
            "{name}: no duplicates"
        );
        let route = o.http.route.as_str();
        let placeholders: BTreeSet<&str> = route
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
            .collect();
        let path_args: BTreeSet<&str> = contract::argument_locations(o)
            .into_iter()
            .filter(|(_, place, _)| *place == "path")
            .map(|(_, _, n)| n)
            .collect();
        assert_eq!(placeholders, path_args, "{name}");
        for (arg, place, _) in contract::argument_locations(o) {
            assert!(
                ["path", "body", "body.filters"].contains(&place),
                "{name}.{arg}: {place}"
            );
        }
        for r in schema["required"].as_array().into_iter().flatten() {
            assert!(
                properties(name).contains(r.as_str().unwrap()),
                "{name}: {r}"
            );
        }
    }
}

// ------------------------------------------------------------------ errors

/// Every `Code`; the match fails to compile when a variant is added.
fn all_codes() -> Vec<Code> {
    let all = [
        Code::InvalidJson,
        Code::InvalidArgument,
        Code::UnknownField,
        Code::PayloadTooLarge,
        Code::NotFound,
        Code::Unavailable,
        Code::Internal,
        Code::Unauthenticated,
    ];
    for c in all {
        match c {
            Code::InvalidJson
            | Code::InvalidArgument
            | Code::UnknownField
            | Code::PayloadTooLarge
            | Code::NotFound
            | Code::Unavailable
            | Code::Internal
            | Code::Unauthenticated => {}
        }
    }
    all.to_vec()
}

#[test]
fn the_error_table_is_the_library_error_codes_with_their_statuses() {
    let library: BTreeSet<(String, u64)> = all_codes()
        .into_iter()
        .map(|c| (c.as_str().to_string(), u64::from(c.status())))
        .collect();
    let table: BTreeSet<(String, u64)> = contract::errors()
        .iter()
        .map(|e| (e.code.clone(), u64::from(e.http_status)))
        .collect();
    assert_eq!(table, library);
    assert_eq!(table.len(), contract::errors().len(), "no code twice");

    let envelope = &contract::contract().error_envelope["properties"]["error"];
    let enumerated: BTreeSet<String> = envelope["properties"]["code"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_string())
        .collect();
    assert_eq!(enumerated, library.iter().map(|(c, _)| c.clone()).collect());
    // The envelope describes what the library sends.
    let allowed: BTreeSet<&str> = envelope["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for e in [
        Error::invalid("limit", "x"),
        Error::NotFound,
        Error::Internal("x".into()),
    ] {
        let body = e.body();
        assert_eq!(body.as_object().unwrap().len(), 1);
        for k in body["error"].as_object().unwrap().keys() {
            assert!(allowed.contains(k.as_str()), "{k}");
        }
    }
}

// ---------------------------------------------------------------- surfaces

#[test]
fn openapi_documents_the_four_routes() {
    let doc = contract::openapi();
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string());
    let paths = doc["paths"].as_object().unwrap();
    for (route, method, op) in [
        ("/api/search", "post", "search_products"),
        (
            "/api/products/{product_id}/evidence",
            "post",
            "get_product_evidence",
        ),
        (
            "/api/retrieval/events/{search_event_id}/compare",
            "post",
            "compare_products",
        ),
        (
            "/api/retrieval/events/{search_event_id}",
            "get",
            "explain_retrieval",
        ),
    ] {
        let o = &paths[route][method];
        assert_eq!(o["operationId"], op, "{method} {route}");
        for status in ["200", "400", "404", "413", "500", "503"] {
            assert!(o["responses"][status].is_object(), "{op}: {status}");
        }
        for p in o["parameters"].as_array().unwrap() {
            assert_eq!(p["in"], "path");
            assert_eq!(p["required"], true);
            assert!(route.contains(&format!("{{{}}}", p["name"].as_str().unwrap())));
        }
        assert_eq!(o["requestBody"].is_object(), method == "post", "{op}");
    }
    assert!(paths["/api/tools"]["get"].is_object());

    // The search body nests the filters.
    let body = &doc["components"]["schemas"]["search_products_request"];
    let filters: BTreeSet<String> = body["properties"]["filters"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(filters, names(FILTER_FIELDS));
    assert!(body["properties"]["query"].is_object());
    assert!(body["properties"]["domain"].is_null());
    assert_eq!(body["additionalProperties"], false);

    // Every $ref resolves inside the document.
    fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r);
                }
                m.values().for_each(|v| refs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(!all.is_empty());
    for r in all {
        let pointer = r.strip_prefix('#').expect("a local reference");
        assert!(doc.pointer(pointer).is_some(), "{r} does not resolve");
    }
}

/// The MCP tool list (what `GET /api/tools?surface=mcp` and `mosaic mcp`
/// serve) is the contract's operations, in contract order, with their
/// schemas unchanged.
#[test]
fn the_mcp_tool_list_is_the_contract_operations() {
    let listing = contract::tools("mcp").unwrap();
    assert_eq!(
        listing.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["tools"]
    );
    let tools = listing["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let operations: Vec<&str> = contract::operations()
        .iter()
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(names, operations);
    assert_eq!(names.len(), 4);
    for t in tools {
        let name = t["name"].as_str().unwrap();
        let o = op(name);
        let keys: BTreeSet<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            BTreeSet::from([
                "name",
                "title",
                "description",
                "inputSchema",
                "outputSchema",
                "annotations"
            ]),
            "{name}"
        );
        // MCP tool names: 1 to 128 of A-Z a-z 0-9 _ - .
        assert!(
            (1..=128).contains(&name.len())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)),
            "{name}"
        );
        assert_eq!(t["title"], o.title, "{name}");
        assert_eq!(t["description"], o.description, "{name}");
        assert_eq!(t["inputSchema"], o.input_schema, "{name}");
        assert_eq!(t["outputSchema"], o.output_schema, "{name}");
        // MCP takes object schemas for both; structured content is an object.
        assert_eq!(t["inputSchema"]["type"], "object", "{name}");
        assert_eq!(t["outputSchema"]["type"], "object", "{name}");
        for r in t["outputSchema"]["required"].as_array().unwrap() {
            assert!(
                t["outputSchema"]["properties"][r.as_str().unwrap()].is_object(),
                "{name}: {r}"
            );
        }
        assert_eq!(
            t["annotations"],
            json!({
                "title": o.title,
                "readOnlyHint": o.read_only,
                "idempotentHint": o.idempotent,
                "destructiveHint": false,
                "openWorldHint": false,
            }),
            "{name}"
        );
    }
}

/// Walks a schema and returns every keyword used (property names aside).
fn keywords(schema: &Value, out: &mut BTreeSet<String>) {
    if let Some(m) = schema.as_object() {
        for (k, v) in m {
            out.insert(k.clone());
            match k.as_str() {
                "properties" => v
                    .as_object()
                    .unwrap()
                    .values()
                    .for_each(|p| keywords(p, out)),
                "items" => keywords(v, out),
                _ => {}
            }
        }
    }
}

#[test]
fn agentcore_tools_use_only_the_schema_subset_agentcore_accepts() {
    let tools = contract::tools("agentcore").unwrap();
    let tools = tools.as_array().unwrap();
    assert_eq!(tools.len(), 4);
    for t in tools {
        let keys: BTreeSet<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, BTreeSet::from(["name", "description", "inputSchema"]));
        assert_eq!(t["inputSchema"]["type"], "object");
        let mut used = BTreeSet::new();
        keywords(&t["inputSchema"], &mut used);
        for k in &used {
            assert!(
                AGENTCORE_KEYWORDS.contains(&k.as_str()),
                "{}: {k}",
                t["name"]
            );
        }
        assert!(!used.contains("anyOf") && !used.contains("oneOf"));
        let name = t["name"].as_str().unwrap();
        let props: BTreeSet<String> = t["inputSchema"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(props, properties(name));
        assert_eq!(
            t["inputSchema"]["required"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
            op(name).input_schema["required"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        );
        // Every type is a single JSON type.
        fn single_types(s: &Value) {
            assert!(s["type"].is_string(), "{s}");
            if let Some(p) = s["properties"].as_object() {
                p.values().for_each(single_types);
            }
            if s.get("items").is_some() {
                single_types(&s["items"]);
            }
        }
        single_types(&t["inputSchema"]);
    }
    // The availability values survive as words.
    let availability = &tools[0]["inputSchema"]["properties"]["availability"];
    assert_eq!(availability["type"], "array");
    assert!(availability["description"]
        .as_str()
        .unwrap()
        .contains("discontinued"));
}

#[test]
fn agentcore_targets_put_each_tool_on_its_own_function_of_the_template() {
    let template =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../template.yaml"))
            .expect("template.yaml");
    let tools = contract::tools("agentcore").unwrap();
    let targets = contract::agentcore_targets();
    let targets = targets.as_array().unwrap();
    assert_eq!(targets.len(), 4);
    for (target, tool) in targets.iter().zip(tools.as_array().unwrap()) {
        let name = tool["name"].as_str().unwrap();
        let logical = contract::logical_function_id(name);
        // The function exists in the template, with its ARN as an output.
        assert!(
            template.contains(&format!(
                "\n  {logical}:\n    Type: AWS::Serverless::Function"
            )),
            "{logical}"
        );
        assert!(
            template.contains(&format!("\n  {logical}Arn:\n")),
            "{logical}Arn output"
        );
        let lambda = &target["targetConfiguration"]["mcp"]["lambda"];
        assert_eq!(lambda["lambdaArn"], format!("${{{logical}Arn}}"));
        assert_eq!(lambda["toolSchema"]["inlinePayload"], json!([tool]));
        assert_eq!(target["gatewayIdentifier"], "${GatewayId}");
        assert_eq!(
            target["credentialProviderConfigurations"][0]["credentialProviderType"],
            "GATEWAY_IAM_ROLE"
        );
        // The headers the identity interceptor sets for the functions are
        // propagated.
        assert_eq!(
            target["metadataConfiguration"]["allowedRequestHeaders"],
            json!(["x-mosaic-principal", "x-mosaic-principal-proof"])
        );
    }
    assert_eq!(
        contract::logical_function_id("get_product_evidence"),
        "GetProductEvidenceFunction"
    );
}

#[test]
fn the_skill_and_mcp_surfaces_list_the_four_operations() {
    let skill = contract::tools("skill").unwrap();
    let ops: Vec<&str> = skill["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        ops,
        [
            "search_products",
            "get_product_evidence",
            "compare_products",
            "explain_retrieval"
        ]
    );
    let mcp = contract::tools("mcp").unwrap();
    let tools = mcp["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 4);
    for t in tools {
        assert!(t["name"].is_string() && t["description"].is_string());
        assert_eq!(t["inputSchema"]["type"], "object");
    }
}

#[test]
fn an_unknown_surface_is_an_invalid_argument() {
    for surface in ["", "MCP", "a2a", "openapi", "skill "] {
        let e = contract::tools(surface).unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{surface:?}");
        assert_eq!(e.status(), 400);
        assert_eq!(e.body()["error"]["field"], "surface");
    }
}

#[test]
fn the_operations_table_is_generated_into_skill_md() {
    let table = contract::skill_operations_table();
    assert!(
        table.starts_with("| Operation | Capability | Route | Required arguments | Read-only |")
    );
    assert_eq!(table.lines().count(), 2 + contract::operations().len());
    let skill = std::fs::read_to_string(repo_root().join(contract::SKILL_MD)).unwrap();
    assert!(skill.starts_with("---\nname: mosaic-hybrid-retrieval\ndescription: "));
    let begin = skill.find(contract::BEGIN_OPERATIONS).unwrap();
    let end = skill.find(contract::END_OPERATIONS).unwrap();
    assert!(skill[begin..end].contains(&table));
}

/// The value of `key: value` on the first line of `block` with exactly
/// `indent` spaces before the key.
fn yaml_value<'a>(block: &'a str, indent: usize, key: &str) -> Option<&'a str> {
    let prefix = format!("{}{key}:", " ".repeat(indent));
    block
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(str::trim)
}

/// A top-level section of the template, or a resource: from its key line to
/// the next key at the same indentation.
fn yaml_block<'a>(template: &'a str, indent: usize, key: &str) -> &'a str {
    let head = format!("\n{}{key}:\n", " ".repeat(indent));
    let start = template.find(&head).unwrap_or_else(|| panic!("{key}")) + head.len();
    let rest = &template[start..];
    let end = rest
        .lines()
        .scan(0, |at, l| {
            let here = *at;
            *at += l.len() + 1;
            Some((here, l))
        })
        .find(|(_, l)| {
            let depth = l.len() - l.trim_start().len();
            !l.trim().is_empty() && !l.trim_start().starts_with('#') && depth <= indent
        })
        .map_or(rest.len(), |(at, _)| at);
    &rest[..end]
}

/// Every function's timeout in the template leaves a margin above the
/// request deadline, which stays above the statement bound: a locked or
/// stalled database is answered with a 503 by the function itself, with
/// time left to post it, never cut off by Lambda.
#[test]
fn the_function_timeout_leaves_a_margin_above_the_request_deadline() {
    /// Time after the deadline for the answer (the handler keeps 250 ms
    /// back from the invocation deadline) and the check of the connection.
    const MARGIN_MS: u64 = 2_000;
    let template = std::fs::read_to_string(repo_root().join("template.yaml")).unwrap();
    let globals = yaml_block(&template, 0, "Globals");
    let resources = yaml_block(&template, 0, "Resources");
    for tool in contract::tools("agentcore").unwrap().as_array().unwrap() {
        let logical = contract::logical_function_id(tool["name"].as_str().unwrap());
        let function = yaml_block(resources, 2, &logical);
        let setting = |indent: usize, key: &str| {
            yaml_value(function, indent + 2, key).or_else(|| yaml_value(globals, indent, key))
        };
        let timeout_s: u64 = setting(4, "Timeout").expect("Timeout").parse().unwrap();
        let env_ms = |key: &str, default: u64| {
            setting(8, key).map_or(default, |v| v.trim_matches('"').parse().unwrap())
        };
        let defaults = RetrievalProfile::default();
        let deadline = env_ms("MOSAIC_REQUEST_DEADLINE_MS", defaults.request_deadline_ms);
        let statement = env_ms("MOSAIC_STATEMENT_TIMEOUT_MS", defaults.statement_timeout_ms);
        assert!(
            timeout_s * 1000 >= deadline + MARGIN_MS,
            "{logical}: Timeout {timeout_s} s, request deadline {deadline} ms"
        );
        assert!(
            statement < deadline,
            "{logical}: statement bound {statement} ms, request deadline {deadline} ms"
        );
    }
}

/// The identity interceptor's function in the template: outside the VPC
/// (it reaches the issuer's keys on the internet and needs no database),
/// told the issuer, the audience and where the keys are, the gateway's own
/// settings, and given time to fetch the keys and still answer.
#[test]
fn the_interceptor_is_told_what_the_gateway_checks_and_has_time_to_fetch_keys() {
    let template = std::fs::read_to_string(repo_root().join("template.yaml")).unwrap();
    let resources = yaml_block(&template, 0, "Resources");
    let function = yaml_block(resources, 2, "IdentityInterceptorFunction");
    let ignored = yaml_block(function, 4, "IgnoreGlobals");
    assert!(
        ignored.lines().any(|l| l.trim() == "- VpcConfig"),
        "{function}"
    );
    let env = |key: &str| yaml_value(function, 10, key).unwrap_or_else(|| panic!("{key}"));
    assert_eq!(env("MOSAIC_JWT_ISSUER"), "!Ref JwtIssuer");
    assert_eq!(
        env("MOSAIC_JWT_AUDIENCE"),
        "!Join [\",\", !Ref JwtAudience]"
    );
    assert_eq!(
        env("MOSAIC_JWT_AUDIENCE_CLAIM"),
        "!Ref AgentCoreAllowedClaim"
    );
    // The discovery document the gateway's authorizer reads, both ways.
    let branches = |block: &str, key: &str| -> Vec<String> {
        let after = block
            .split(&format!("{key}: !If\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("{key}: !If"));
        after
            .lines()
            .take_while(|l| l.trim_start().starts_with("- "))
            .map(|l| l.trim().to_string())
            .collect()
    };
    let gateway = yaml_block(resources, 2, "Gateway");
    let ours = branches(function, "MOSAIC_JWT_DISCOVERY_URL");
    assert_eq!(ours.len(), 3, "{ours:?}");
    assert_eq!(ours, branches(gateway, "DiscoveryUrl"));
    let timeout_s: u64 = yaml_value(function, 6, "Timeout").unwrap().parse().unwrap();
    assert!(
        std::time::Duration::from_secs(timeout_s)
            >= mosaic::jwt::FETCH_BUDGET + std::time::Duration::from_secs(1),
        "Timeout {timeout_s} s"
    );
}

/// Only AgentCore, on behalf of a resource of this account and region, may
/// take the role that invokes the interceptor and the four functions.
#[test]
fn only_this_account_s_agentcore_resources_take_the_gateway_role() {
    let template = std::fs::read_to_string(repo_root().join("template.yaml")).unwrap();
    let resources = yaml_block(&template, 0, "Resources");
    let role = yaml_block(resources, 2, "GatewayRole");
    let trust = yaml_block(role, 6, "AssumeRolePolicyDocument");
    assert!(
        trust.contains("Principal: {Service: bedrock-agentcore.amazonaws.com}"),
        "{trust}"
    );
    let equals = yaml_block(trust, 14, "StringEquals");
    assert_eq!(
        yaml_value(equals, 16, "aws:SourceAccount"),
        Some("!Ref AWS::AccountId")
    );
    let like = yaml_block(trust, 14, "ArnLike");
    assert_eq!(
        yaml_value(like, 16, "aws:SourceArn"),
        Some("!Sub \"arn:${AWS::Partition}:bedrock-agentcore:${AWS::Region}:${AWS::AccountId}:*\"")
    );
}

/// The principal-proof key is read only by the interceptor and the four
/// functions, and its value is written by nobody in place.
#[test]
fn the_proof_key_is_read_by_its_users_only_and_replaced_by_nobody() {
    let template = std::fs::read_to_string(repo_root().join("template.yaml")).unwrap();
    let resources = yaml_block(&template, 0, "Resources");
    let policy = yaml_block(resources, 2, "PrincipalProofKeyPolicy");
    let statements: Vec<&str> = policy.split("- Sid: ").skip(1).collect();
    assert_eq!(statements.len(), 2, "{policy}");
    let read = statements
        .iter()
        .find(|s| s.starts_with("OnlyTheInterceptorAndTheFunctionsReadTheKey"))
        .unwrap();
    assert!(read.contains("Effect: Deny") && read.contains("Principal: \"*\""));
    assert!(read.contains("Action: secretsmanager:GetSecretValue"));
    for role in [
        "IdentityInterceptorFunctionRole",
        "SearchProductsFunctionRole",
        "GetProductEvidenceFunctionRole",
        "CompareProductsFunctionRole",
        "ExplainRetrievalFunctionRole",
    ] {
        assert!(read.contains(&format!("- !GetAtt {role}.Arn")), "{role}");
    }
    let write = statements
        .iter()
        .find(|s| s.starts_with("NobodyReplacesTheKeyInPlace"))
        .unwrap();
    assert!(write.contains("Effect: Deny") && write.contains("Principal: \"*\""));
    assert!(!write.contains("Condition"), "{write}");
    for action in ["PutSecretValue", "UpdateSecret", "RotateSecret"] {
        assert!(
            write.contains(&format!("- secretsmanager:{action}\n")),
            "{action}"
        );
    }
}
