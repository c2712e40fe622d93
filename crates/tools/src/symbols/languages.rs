//! The languages `symbols` understands: file extensions, tree-sitter grammars
//! and the query that finds each language's definitions.
//!
//! Every query captures the defining node as `@definition.<kind>` and its name
//! as `@name`. What a query cannot say on its own (a function inside an impl
//! is a method, a Go `type X struct` is a struct) is refined in `extract`.

use std::sync::LazyLock;

use tree_sitter::{Language, Query};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lang {
    Rust,
    Python,
    TypeScript,
    Tsx,
    JavaScript,
    Go,
}

/// Extensions listed in the error for an unsupported file.
pub(crate) const SUPPORTED_EXTENSIONS: &[&str] = &[
    "rs", "py", "pyi", "ts", "mts", "cts", "tsx", "js", "mjs", "cjs", "jsx", "go",
];

impl Lang {
    pub(crate) fn from_extension(extension: &str) -> Option<Self> {
        Some(match extension.to_ascii_lowercase().as_str() {
            "rs" => Self::Rust,
            "py" | "pyi" => Self::Python,
            "ts" | "mts" | "cts" => Self::TypeScript,
            "tsx" => Self::Tsx,
            "js" | "mjs" | "cjs" | "jsx" => Self::JavaScript,
            "go" => Self::Go,
            _ => return None,
        })
    }

    pub(crate) fn id(self) -> &'static str {
        match self {
            Self::Rust => "rust",
            Self::Python => "python",
            Self::TypeScript => "typescript",
            Self::Tsx => "tsx",
            Self::JavaScript => "javascript",
            Self::Go => "go",
        }
    }

    pub(crate) fn grammar(self) -> Language {
        match self {
            Self::Rust => tree_sitter_rust::LANGUAGE.into(),
            Self::Python => tree_sitter_python::LANGUAGE.into(),
            Self::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Self::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Self::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Self::Go => tree_sitter_go::LANGUAGE.into(),
        }
    }

    /// The compiled definitions query, built once per process.
    pub(crate) fn query(self) -> Result<&'static Query, String> {
        let compiled: &'static Result<Query, String> = match self {
            Self::Rust => &RUST,
            Self::Python => &PYTHON,
            Self::TypeScript => &TYPESCRIPT,
            Self::Tsx => &TSX,
            Self::JavaScript => &JAVASCRIPT,
            Self::Go => &GO,
        };
        compiled
            .as_ref()
            .map_err(|err| format!("the {} symbols query does not compile: {err}", self.id()))
    }

    fn source(self) -> &'static str {
        match self {
            Self::Rust => RUST_QUERY,
            Self::Python => PYTHON_QUERY,
            Self::TypeScript | Self::Tsx => TYPESCRIPT_QUERY,
            Self::JavaScript => JAVASCRIPT_QUERY,
            Self::Go => GO_QUERY,
        }
    }
}

fn compile(lang: Lang) -> Result<Query, String> {
    Query::new(&lang.grammar(), lang.source()).map_err(|err| err.to_string())
}

static RUST: LazyLock<Result<Query, String>> = LazyLock::new(|| compile(Lang::Rust));
static PYTHON: LazyLock<Result<Query, String>> = LazyLock::new(|| compile(Lang::Python));
static TYPESCRIPT: LazyLock<Result<Query, String>> = LazyLock::new(|| compile(Lang::TypeScript));
static TSX: LazyLock<Result<Query, String>> = LazyLock::new(|| compile(Lang::Tsx));
static JAVASCRIPT: LazyLock<Result<Query, String>> = LazyLock::new(|| compile(Lang::JavaScript));
static GO: LazyLock<Result<Query, String>> = LazyLock::new(|| compile(Lang::Go));

const RUST_QUERY: &str = r#"
(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(struct_item name: (type_identifier) @name) @definition.struct
(union_item name: (type_identifier) @name) @definition.union
(enum_item name: (type_identifier) @name) @definition.enum
(trait_item name: (type_identifier) @name) @definition.trait
(impl_item type: (_) @name) @definition.impl
(type_item name: (type_identifier) @name) @definition.type
(const_item name: (identifier) @name) @definition.const
(static_item name: (identifier) @name) @definition.static
(mod_item name: (identifier) @name) @definition.module
(macro_definition name: (identifier) @name) @definition.macro
"#;

const PYTHON_QUERY: &str = r#"
(class_definition name: (identifier) @name) @definition.class
(function_definition name: (identifier) @name) @definition.function
(type_alias_statement left: (type (identifier) @name)) @definition.type
"#;

const JAVASCRIPT_QUERY: &str = r#"
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(class_declaration name: (identifier) @name) @definition.class
(class name: (identifier) @name) @definition.class
(method_definition name: (_) @name) @definition.method
(field_definition
  property: (_) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.method
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
"#;

const TYPESCRIPT_QUERY: &str = r#"
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(function_signature name: (identifier) @name) @definition.function
(class_declaration name: (type_identifier) @name) @definition.class
(abstract_class_declaration name: (type_identifier) @name) @definition.class
(class name: (type_identifier) @name) @definition.class
(method_definition name: (_) @name) @definition.method
(method_signature name: (_) @name) @definition.method
(abstract_method_signature name: (_) @name) @definition.method
(public_field_definition
  name: (_) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.method
(interface_declaration name: (type_identifier) @name) @definition.interface
(type_alias_declaration name: (type_identifier) @name) @definition.type
(enum_declaration name: (identifier) @name) @definition.enum
(internal_module name: (_) @name) @definition.module
(module name: (_) @name) @definition.module
(variable_declarator
  name: (identifier) @name
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function
"#;

const GO_QUERY: &str = r#"
(function_declaration name: (identifier) @name) @definition.function
(method_declaration name: (field_identifier) @name) @definition.method
(type_spec name: (type_identifier) @name) @definition.type
(type_alias name: (type_identifier) @name) @definition.type
(method_elem name: (field_identifier) @name) @definition.method
(source_file (const_declaration (const_spec name: (identifier) @name) @definition.const))
(source_file (var_declaration (var_spec name: (identifier) @name) @definition.variable))
(source_file (var_declaration (var_spec_list (var_spec name: (identifier) @name) @definition.variable)))
"#;
