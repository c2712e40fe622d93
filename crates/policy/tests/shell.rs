//! Tests of shell.

#[test]
#[ignore]
fn dump_trees() {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .unwrap();
    let input = std::env::var("DUMP").unwrap();
    for line in input.split("\n@@\n") {
        let tree = parser.parse(line, None).unwrap();
        println!("=== {line}\n{}", tree.root_node().to_sexp());
    }
}
