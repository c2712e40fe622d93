//! Keyword search: BM25 over each note's words, plus boosts for query
//! terms in the file name or a heading, for notes holding every term, and
//! for recent daily notes. Ties break on the note's name, so the same
//! files and query always give the same order. A hit has the shape of
//! OpenClaw's own `memory_search` results ([`MemoryHit`]), its score mapped
//! into (0, 1) as OpenClaw maps its keyword relevance (`r / (1 + r)`).

use serde::Serialize;

use super::index::Snapshot;

const K1: f64 = 1.2;
const B: f64 = 0.75;
/// Weight of a query term found in the file name (times its IDF): above
/// the most a body match can give (`K1 + 1`), so the note named after a
/// topic outranks notes that mention it.
const NAME_BOOST: f64 = 2.5;
/// Weight of a query term found in a heading (times its IDF).
const HEADING_BOOST: f64 = 0.5;
/// Factor for notes holding every query term (when there are several).
const ALL_TERMS_BOOST: f64 = 1.25;
/// Up to this factor for the newest daily note, halving every 30 days
/// older than the newest dated note (not the clock: results stay
/// reproducible).
const RECENCY_BOOST: f64 = 0.25;
const RECENCY_HALF_LIFE_DAYS: f64 = 30.0;
/// Snippets longer than this are cut around the first match.
pub const SNIPPET_CHARS: usize = 240;

/// Lowercased runs of letters and digits.
pub fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// One ranked note, serialized as OpenClaw's `memory_search` gives a
/// result: `{"path", "startLine", "endLine", "score", "snippet", "source"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryHit {
    /// Relative to the memory root (the workspace), `/`-separated.
    pub path: String,
    /// 1-based first line of the snippet.
    pub start_line: usize,
    /// 1-based last line of the snippet (inclusive).
    pub end_line: usize,
    /// In (0, 1); higher is better.
    pub score: f64,
    /// The snippet's lines (cut to [`SNIPPET_CHARS`] around the match).
    pub snippet: String,
    /// Always `memory` (OpenClaw's other sources are its sessions).
    pub source: &'static str,
    /// The heading the snippet sits under, if any (the MCP tool shows it;
    /// not part of OpenClaw's shape).
    #[serde(skip)]
    pub heading: Option<String>,
}

/// The distinct terms of `query`, in order of first appearance.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for term in tokenize(query) {
        if !terms.contains(&term) {
            terms.push(term);
        }
    }
    terms
}

/// Scores every note against `terms` (through the postings: only notes
/// holding a term are touched); returns the best `limit` with snippets,
/// and how many notes matched at all.
///
/// `ids` are the terms' ids ([`super::index::Index::term_ids`]).
pub fn rank(
    snapshot: &Snapshot,
    terms: &[String],
    ids: &[Option<u32>],
    limit: usize,
) -> (Vec<MemoryHit>, usize) {
    let docs = &snapshot.docs;
    if docs.is_empty() || terms.is_empty() {
        return (Vec::new(), 0);
    }
    let count = docs.len() as f64;
    let mut totals = vec![0.0f64; docs.len()];
    let mut present = vec![0u16; docs.len()];
    let no_postings: Vec<(u32, u32)> = Vec::new();
    let no_names: Vec<u32> = Vec::new();
    for id in ids.iter().copied() {
        let Some(id) = id else { continue };
        let body = snapshot.postings.get(id as usize).unwrap_or(&no_postings);
        let names = snapshot.name_postings.get(id as usize).unwrap_or(&no_names);
        let with_term = union_len(body, names) as f64;
        if with_term == 0.0 {
            continue;
        }
        let idf = (1.0 + (count - with_term + 0.5) / (with_term + 0.5)).ln();
        let mut names_iter = names.iter().peekable();
        for &(index, tf) in body {
            while names_iter.next_if(|&&name| name < index).is_some() {}
            let in_name = names_iter.next_if_eq(&&index).is_some();
            let doc = &docs[index as usize];
            let tf = f64::from(tf);
            let length_norm = 1.0 - B + B * f64::from(doc.length) / snapshot.average_length;
            let mut gained = idf * tf * (K1 + 1.0) / (tf + K1 * length_norm);
            if in_name {
                gained += idf * NAME_BOOST;
            }
            if doc.heading_terms.binary_search(&id).is_ok() {
                gained += idf * HEADING_BOOST;
            }
            totals[index as usize] += gained;
            present[index as usize] += 1;
        }
        // Notes holding the term in their name only.
        for &index in names {
            if body.binary_search_by_key(&index, |&(i, _)| i).is_err() {
                totals[index as usize] += idf * NAME_BOOST;
                present[index as usize] += 1;
            }
        }
    }
    let all = u16::try_from(terms.len()).unwrap_or(u16::MAX);
    let mut scored: Vec<(f64, u32)> = Vec::new();
    for (index, (&total, &found)) in totals.iter().zip(&present).enumerate() {
        if found == 0 {
            continue;
        }
        let doc = &docs[index];
        let mut total = total;
        if all > 1 && found == all {
            total *= ALL_TERMS_BOOST;
        }
        if let (Some(day), Some(newest)) = (doc.day, snapshot.newest_day) {
            let age = (newest - day).max(0) as f64;
            total *= 1.0 + RECENCY_BOOST * 0.5f64.powf(age / RECENCY_HALF_LIFE_DAYS);
        }
        scored.push((total, u32::try_from(index).unwrap_or(u32::MAX)));
    }
    let matched = scored.len();
    // `docs` is sorted by name, so the index breaks ties by name.
    let by_rank = |a: &(f64, u32), b: &(f64, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if scored.len() > limit {
        scored.select_nth_unstable_by(limit, by_rank);
        scored.truncate(limit);
    }
    scored.sort_by(by_rank);
    let hits = scored
        .into_iter()
        .map(|(score, index)| {
            let doc = &docs[index as usize];
            let text = doc.text(snapshot.root.as_ref());
            let (line, snippet, heading) = snippet(&text, terms);
            MemoryHit {
                path: doc.name.clone(),
                start_line: line,
                end_line: line,
                score: ((score / (1.0 + score)) * 10_000.0).round() / 10_000.0,
                snippet,
                source: "memory",
                heading,
            }
        })
        .collect();
    (hits, matched)
}

/// How many distinct notes two sorted index lists name.
fn union_len(body: &[(u32, u32)], names: &[u32]) -> usize {
    let extra = names
        .iter()
        .filter(|&&index| body.binary_search_by_key(&index, |&(i, _)| i).is_err())
        .count();
    body.len() + extra
}

/// The line holding the most distinct query terms (then the most
/// occurrences, then the earliest), with its 1-based number and the
/// nearest heading above it. A note matched by its name only gives its
/// first non-empty line.
fn snippet(text: &str, terms: &[String]) -> (usize, String, Option<String>) {
    let mut best: Option<(usize, usize, usize, Option<&str>)> = None;
    let mut first_non_empty: Option<(usize, &str)> = None;
    let mut heading: Option<&str> = None;
    let mut best_text = "";
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if first_non_empty.is_none() {
            first_non_empty = Some((index, trimmed));
        }
        let words = tokenize(trimmed);
        let distinct = terms.iter().filter(|term| words.contains(term)).count();
        if distinct > 0 {
            let occurrences = words.iter().filter(|word| terms.contains(word)).count();
            let better = best.is_none_or(|(_, d, o, _)| (distinct, occurrences) > (d, o));
            if better {
                let under = if trimmed.starts_with('#') {
                    None
                } else {
                    heading
                };
                best = Some((index, distinct, occurrences, under));
                best_text = trimmed;
            }
        }
        if trimmed.starts_with('#') {
            heading = Some(trimmed);
        }
    }
    match best {
        Some((index, _, _, under)) => (
            index + 1,
            cut(best_text, terms),
            under.map(|h| h.trim_start_matches('#').trim().to_owned()),
        ),
        None => match first_non_empty {
            Some((index, line)) => (index + 1, cut(line, &[]), None),
            None => (1, String::new(), None),
        },
    }
}

/// At most [`SNIPPET_CHARS`] characters, starting a little before the
/// first query term when the line is longer.
fn cut(line: &str, terms: &[String]) -> String {
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= SNIPPET_CHARS {
        return line.to_owned();
    }
    let lower = line.to_lowercase();
    let first_match_byte = terms
        .iter()
        .filter_map(|term| lower.find(term.as_str()))
        .min();
    let first_match = first_match_byte
        .map(|byte| lower.get(..byte).map_or(0, |before| before.chars().count()))
        .unwrap_or(0);
    let start = first_match
        .saturating_sub(SNIPPET_CHARS / 4)
        .min(chars.len() - SNIPPET_CHARS);
    let mut out: String = chars[start..start + SNIPPET_CHARS].iter().collect();
    if start > 0 {
        out.insert_str(0, bridge_protocol::excerpt::CUT_MARK);
    }
    if start + SNIPPET_CHARS < chars.len() {
        out.push_str(bridge_protocol::excerpt::CUT_MARK);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenize_lowercases_and_splits_on_punctuation() {
        assert_eq!(
            tokenize("Deploy: staging-2, ÉTÉ!"),
            ["deploy", "staging", "2", "été"]
        );
    }

    #[test]
    fn query_terms_are_distinct() {
        assert_eq!(query_terms("Rust rust RUST async"), ["rust", "async"]);
    }

    #[test]
    fn snippets_pick_the_line_with_most_terms_and_its_heading() {
        let text = "# Title\n\n## Deploys\nstaging went fine\nthe staging deploy broke\n";
        let terms = query_terms("staging deploy");
        assert_eq!(
            snippet(text, &terms),
            (
                5,
                "the staging deploy broke".to_owned(),
                Some("Deploys".to_owned())
            )
        );
    }

    #[test]
    fn long_lines_are_cut_near_the_match() {
        let line = format!("{} needle {}", "a ".repeat(300), "b ".repeat(300));
        let out = cut(&line, &["needle".to_owned()]);
        assert!(out.contains("needle"));
        assert!(out.starts_with('…') && out.ends_with('…'));
        assert_eq!(out.chars().count(), SNIPPET_CHARS + 2);
    }
}
