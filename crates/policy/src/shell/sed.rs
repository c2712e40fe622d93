//! A scanner for sed scripts, enough to tell whether one only prints.

/// Scans a sed script for the commands that write files (`w`, `W`, the `w`
/// flag of `s`) or run commands (`e`, the `e` flag of `s`) or read other
/// files (`r`, `R`). Anything it does not understand is refused.
pub(super) fn script_is_read_only(script: &str) -> Result<(), char> {
    let chars: Vec<char> = script.chars().collect();
    let mut at = 0;
    let skip_regex = |at: &mut usize, delimiter: char| {
        while *at < chars.len() && chars[*at] != delimiter {
            if chars[*at] == '\\' {
                *at += 1;
            }
            *at += 1;
        }
        *at += 1;
    };
    while at < chars.len() {
        // Separators and addresses: numbers, `$`, `/regex/`, `\cregexc`, ranges, steps, negation.
        match chars[at] {
            ' ' | '\t' | '\n' | ';' | ',' | '!' | '$' | '~' | '+' | '0'..='9' | '{' | '}' => {
                at += 1;
                continue;
            }
            '/' => {
                at += 1;
                skip_regex(&mut at, '/');
                skip_address_flags(&chars, &mut at);
                continue;
            }
            '\\' => {
                let Some(&delimiter) = chars.get(at + 1) else {
                    return Err('\\');
                };
                at += 2;
                skip_regex(&mut at, delimiter);
                skip_address_flags(&chars, &mut at);
                continue;
            }
            _ => {}
        }
        let command = chars[at];
        at += 1;
        match command {
            's' | 'y' => {
                let Some(&delimiter) = chars.get(at) else {
                    return Err(command);
                };
                at += 1;
                skip_regex(&mut at, delimiter);
                skip_regex(&mut at, delimiter);
                if command == 's' {
                    while at < chars.len() && !matches!(chars[at], ';' | '\n' | '}') {
                        if matches!(chars[at], 'w' | 'e' | 'W') {
                            return Err(command);
                        }
                        at += 1;
                    }
                }
            }
            // Text or label arguments run to the end of the line (or `;` for labels).
            'a' | 'i' | 'c' => skip_to_line_end(&chars, &mut at),
            ':' | 'b' | 't' | 'T' => {
                while at < chars.len() && !matches!(chars[at], ';' | '\n') {
                    at += 1;
                }
            }
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | 'l' | '=' | 'q'
            | 'Q' | 'z' | 'F' => {}
            other => return Err(other),
        }
    }
    Ok(())
}

fn skip_address_flags(chars: &[char], at: &mut usize) {
    while *at < chars.len() && matches!(chars[*at], 'I' | 'M') {
        *at += 1;
    }
}

fn skip_to_line_end(chars: &[char], at: &mut usize) {
    while *at < chars.len() && chars[*at] != '\n' {
        if chars[*at] == '\\' {
            *at += 1;
        }
        *at += 1;
    }
}
