//! Commands that run a script given as text (`bash -c`, `eval`, `watch`):
//! the script is analysed like the command line itself.

use super::Context;
use super::words::Word;

/// `bash -c 'script'` runs the script: analyse it like the command line.
pub(super) fn run_nested_shell(context: &mut Context, name: &str, args: &[Word]) {
    let mut index = 0;
    let mut has_script_flag = false;
    while let Some(text) = args.get(index).and_then(Word::value) {
        if !text.starts_with('-') && !text.starts_with('+') {
            break;
        }
        index += 1;
        if text == "--" {
            break;
        }
        let cluster = text.trim_start_matches(['-', '+']);
        if text.starts_with('-') && !text.starts_with("--") && cluster.contains('c') {
            has_script_flag = true;
        }
        if matches!(
            text.as_str(),
            "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file"
        ) {
            index += 1;
        }
    }
    if !has_script_flag {
        return;
    }
    context.needs_approval(format!("runs a nested shell: {name} -c"));
    match args.get(index).map(Word::value) {
        Some(Some(script)) => context.analyze_script(&script),
        Some(None) => context.needs_approval(format!("{name} -c runs a script built at run time")),
        None => {}
    }
}

pub(super) fn run_joined_script(context: &mut Context, name: &str, args: &[Word]) {
    context.needs_approval(format!("{name} runs its arguments as a script"));
    let values: Option<Vec<String>> = args.iter().map(Word::value).collect();
    match values {
        Some(values) => context.analyze_script(&values.join(" ")),
        None => context.needs_approval(format!("{name} runs a script built at run time")),
    }
}
