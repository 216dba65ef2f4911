//! The reply budget: how much of an execution's output, return value and error its reply puts
//! before the model. The three share `reply_budget_bytes`, counted as a client receives the
//! reply: the text block's text plus `structuredContent` as compact JSON. Both carry the three
//! (the text block for clients that read text, `structuredContent` for those that read
//! structured results), so a client that reads both still gets no more than the budget. Past
//! it, each part keeps its head and its tail around a marker that says how much was cut and
//! what to do instead. Media payloads are `media`'s; the other fields of media blocks take
//! their bytes from the budget before it is shared here (`execute`).

use serde_json::{Map, Value};

use crate::sandbox::outcome::CapturedOutput;
use crate::text::{prefix, suffix};

/// What a reply shows of an execution's output, return value and error.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Shown {
    pub output: String,
    pub result: Option<ShownResult>,
    pub error: Option<String>,
}

/// A return value as a reply shows it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum ShownResult {
    Whole(Value),
    /// Its compact JSON, cut to fit (a string in the structured content).
    Cut(String),
}

impl ShownResult {
    fn structured(&self) -> Value {
        match self {
            ShownResult::Whole(value) => value.clone(),
            ShownResult::Cut(json) => Value::String(json.clone()),
        }
    }
}

/// The parts a reply must fit, as the execution left them.
pub(super) struct Parts {
    pub output: CapturedOutput,
    pub result: Option<Value>,
    pub error: Option<String>,
}

/// The text block of a reply: the output, then `Result: <compact JSON>`, then `Error: ...`.
pub(super) fn text(shown: &Shown) -> String {
    let mut text = shown.output.clone();
    let mut add = |part: String| {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&part);
    };
    match &shown.result {
        Some(ShownResult::Whole(result)) => add(format!("Result: {}", compact(result))),
        Some(ShownResult::Cut(json)) => add(format!("Result: {json}")),
        None => {}
    }
    if let Some(error) = &shown.error {
        add(format!("Error: {error}"));
    }
    if text.is_empty() {
        text.push_str("(no output)");
    }
    text
}

/// Compact JSON, as every result shown to the model is written.
pub(super) fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// The bytes a reply puts before the model: its text plus its structured content as compact
/// JSON.
pub(super) fn visible_bytes(text: &str, structured: &Value) -> usize {
    text.len() + compact(structured).len()
}

/// Fits `parts` into `budget` bytes, `frame` being the rest of the structured content (the
/// report's other fields): returns the text block and the structured content.
pub(super) fn fit(parts: Parts, frame: Map<String, Value>, budget: usize) -> (String, Value) {
    let build = |shown: &Shown| {
        let mut structured = frame.clone();
        structured.insert("output".into(), Value::String(shown.output.clone()));
        if let Some(error) = &shown.error {
            structured.insert("error".into(), Value::String(error.clone()));
        }
        if let Some(result) = &shown.result {
            structured.insert("result".into(), result.structured());
        }
        let structured = Value::Object(structured);
        (text(shown), structured)
    };
    let sizes = Sizes::of(&parts);
    if parts.output.cut == 0 && sizes.total() <= budget {
        // Small enough to be shown whole, unless the frame or JSON escaping tips it over.
        let whole = Shown {
            output: parts.output.rendered(),
            result: parts.result.clone().map(ShownResult::Whole),
            error: parts.error.clone(),
        };
        let (text, structured) = build(&whole);
        if visible_bytes(&text, &structured) <= budget {
            return (text, structured);
        }
    }
    // What the frame and the empty parts cost, and what is left for the parts, which appear in
    // both the text and the structured content.
    let empty = Shown {
        output: String::new(),
        result: parts
            .result
            .as_ref()
            .map(|_| ShownResult::Whole(Value::Null)),
        error: parts.error.as_ref().map(|_| String::new()),
    };
    let (text, structured) = build(&empty);
    let fixed = visible_bytes(&text, &structured);
    let mut allowance = budget.saturating_sub(fixed) / 2;
    let mut best = None;
    for _ in 0..12 {
        let shown = sizes.cut(&parts, allowance, budget);
        let (text, structured) = build(&shown);
        let used = visible_bytes(&text, &structured);
        if used <= budget || allowance == 0 {
            best = Some((text, structured));
            break;
        }
        // JSON escaping makes some bytes count more than once: take the excess off and retry.
        allowance = allowance.saturating_sub((used - budget).max(allowance / 8).max(1));
    }
    best.unwrap_or_else(|| build(&sizes.cut(&parts, 0, budget)))
}

/// The byte sizes of the three parts (the output counting what the host already cut).
struct Sizes {
    output: usize,
    result: usize,
    error: usize,
    result_json: Option<String>,
}

impl Sizes {
    fn of(parts: &Parts) -> Self {
        let result_json = parts.result.as_ref().map(compact);
        Sizes {
            output: parts.output.total_bytes(),
            result: result_json.as_ref().map_or(0, String::len),
            error: parts.error.as_ref().map_or(0, String::len),
            result_json,
        }
    }

    fn total(&self) -> usize {
        self.output + self.result + self.error
    }

    /// Each part cut to its share of `allowance` bytes.
    fn cut(&self, parts: &Parts, allowance: usize, budget: usize) -> Shown {
        let [output, result, error] = shares([self.output, self.result, self.error], allowance);
        Shown {
            output: cut_output(&parts.output, output, budget),
            result: match (&parts.result, &self.result_json) {
                (Some(_), Some(json)) if json.len() > result => {
                    Some(ShownResult::Cut(cut_result(json, result, budget)))
                }
                (value, _) => value.clone().map(ShownResult::Whole),
            },
            error: parts.error.as_ref().map(|e| cut_error(e, error)),
        }
    }
}

/// Splits `allowance` among parts of the given sizes: small parts get all they need, the rest
/// is shared equally by the larger ones.
fn shares<const N: usize>(sizes: [usize; N], allowance: usize) -> [usize; N] {
    let mut order: Vec<usize> = (0..N).collect();
    order.sort_by_key(|&i| sizes[i]);
    let mut out = [0; N];
    let mut left = allowance;
    for (done, &i) in order.iter().enumerate() {
        let share = left / (N - done);
        out[i] = sizes[i].min(share);
        left -= out[i];
    }
    out
}

fn output_marker(cut: usize, total: usize, budget: usize) -> String {
    format!(
        "[... {cut} of {total} bytes of output cut here to fit the reply budget ({budget} bytes): print less, or filter in code and print only what is needed ...]"
    )
}

fn result_marker(cut: usize, total: usize, budget: usize) -> String {
    format!(
        "[... {cut} of {total} bytes of the return value (compact JSON) cut here to fit the reply budget ({budget} bytes): return less, e.g. filter, slice or summarise the data in code ...]"
    )
}

fn error_marker(cut: usize, total: usize) -> String {
    format!("[... {cut} of {total} bytes of the error cut here ...]")
}

/// A head and a tail around a marker on a line of its own.
fn around(head: &str, marker: &str, tail: &str) -> String {
    let newline = if head.is_empty() || head.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    format!("{head}{newline}{marker}\n{tail}")
}

/// The output cut to `allowance` bytes: its head and its tail around a marker (on line
/// boundaries when one is near), counting what the host had already cut.
fn cut_output(output: &CapturedOutput, allowance: usize, budget: usize) -> String {
    let total = output.total_bytes();
    if output.cut == 0 && total <= allowance {
        return format!("{}{}", output.head, output.tail);
    }
    // Before and after the cut: one text when the host kept it whole (then longer than the
    // allowance, so head and tail cannot overlap), else the head and the worker's tail.
    let joined;
    let (front, back) = if output.cut == 0 {
        joined = format!("{}{}", output.head, output.tail);
        (joined.as_str(), joined.as_str())
    } else {
        (output.head.as_str(), output.tail.as_str())
    };
    let room = allowance.saturating_sub(output_marker(total, total, budget).len() + 2);
    let tail_len = (room / 2).min(back.len());
    let head_len = (room - tail_len).min(front.len());
    let tail_len = (room - head_len).min(back.len());
    let head = line_prefix(front, head_len);
    let tail = line_suffix(back, tail_len);
    let cut = total.saturating_sub(head.len() + tail.len());
    let marker = if output.cut != 0
        && head.len() + tail.len() == output.head.len() + output.tail.len()
    {
        // All the host kept fits: only the host's own cap cut.
        format!(
            "[... {cut} of {total} bytes of output cut here (past output_limit_bytes, what the host keeps): print less, or filter in code and print only what is needed ...]"
        )
    } else {
        output_marker(cut, total, budget)
    };
    around(head, &marker, tail)
}

fn cut_result(json: &str, allowance: usize, budget: usize) -> String {
    let total = json.len();
    let room = allowance.saturating_sub(result_marker(total, total, budget).len());
    let head = prefix(json, room - room / 2);
    let tail = suffix(json, room / 2);
    let cut = total.saturating_sub(head.len() + tail.len());
    format!("{head}{}{tail}", result_marker(cut, total, budget))
}

fn cut_error(error: &str, allowance: usize) -> String {
    let total = error.len();
    if total <= allowance {
        return error.to_string();
    }
    let room = allowance.saturating_sub(error_marker(total, total).len() + 2);
    let head = line_prefix(error, room - room / 2);
    let tail = line_suffix(error, room / 2);
    let cut = total.saturating_sub(head.len() + tail.len());
    around(head, &error_marker(cut, total), tail)
}

/// A prefix of at most `max` bytes that ends after a newline when one is in its last quarter.
fn line_prefix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let head = prefix(s, max);
    match head.rfind('\n') {
        Some(i) if head.len() - i <= max / 4 => &head[..=i],
        _ => head,
    }
}

/// A suffix of at most `max` bytes that starts after a newline when one is in its first quarter.
fn line_suffix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let tail = suffix(s, max);
    match tail.find('\n') {
        Some(i) if i < max / 4 && i + 1 < tail.len() => &tail[i + 1..],
        _ => tail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn frame() -> Map<String, Value> {
        let Value::Object(map) =
            json!({"success": true, "executionTimeMs": 12, "toolCallsMade": []})
        else {
            unreachable!()
        };
        map
    }

    fn fitted(parts: Parts, budget: usize) -> (String, Value) {
        let (text, structured) = fit(parts, frame(), budget);
        let used = visible_bytes(&text, &structured);
        assert!(used <= budget, "{used} bytes over a budget of {budget}");
        (text, structured)
    }

    #[test]
    fn a_small_reply_is_whole_and_compact() {
        let (text, structured) = fitted(
            Parts {
                output: CapturedOutput::whole("hi\n"),
                result: Some(json!({"a": [1, 2]})),
                error: None,
            },
            4000,
        );
        assert_eq!(text, "hi\nResult: {\"a\":[1,2]}");
        assert_eq!(structured["output"], "hi\n");
        assert_eq!(structured["result"], json!({"a": [1, 2]}));
    }

    #[test]
    fn a_big_output_keeps_head_and_tail_within_the_budget() {
        let lines: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        let (text, structured) = fitted(
            Parts {
                output: CapturedOutput::whole(lines.clone()),
                result: None,
                error: None,
            },
            40_000,
        );
        assert!(text.starts_with("line 0\nline 1\n"), "{}", &text[..40]);
        assert!(
            text.ends_with("line 99999\n"),
            "{}",
            &text[text.len() - 40..]
        );
        assert!(text.contains("bytes of output cut here to fit the reply budget (40000 bytes)"));
        let shown = structured["output"].as_str().unwrap();
        assert_eq!(shown, text);
        // Most of the budget is used.
        assert!(visible_bytes(&text, &structured) > 30_000);
    }

    #[test]
    fn output_the_host_already_cut_counts_what_was_cut() {
        let output = CapturedOutput {
            head: "a".repeat(1 << 20),
            cut: 50_000_000,
            tail: "the end\n".into(),
        };
        let (text, _) = fitted(
            Parts {
                output,
                result: None,
                error: None,
            },
            40_000,
        );
        assert!(text.ends_with("the end\n"));
        let total = (1 << 20) + 50_000_000 + 8;
        assert!(
            text.contains(&format!(" of {total} bytes of output cut here")),
            "{text:.300}"
        );
    }

    #[test]
    fn a_huge_result_becomes_its_cut_json_text() {
        let big: Vec<u64> = (0..200_000).collect();
        let (text, structured) = fitted(
            Parts {
                output: CapturedOutput::whole("x\n"),
                result: Some(json!(big)),
                error: None,
            },
            40_000,
        );
        let shown = structured["result"].as_str().unwrap();
        assert!(shown.starts_with("[0,1,2,3"));
        assert!(shown.ends_with("199998,199999]"));
        assert!(shown.contains("bytes of the return value (compact JSON) cut here"));
        assert!(text.starts_with("x\nResult: [0,1,2"));
    }

    #[test]
    fn output_result_and_error_share_the_budget_even_escaped() {
        let quotes = "\"\\\u{1}".repeat(100_000);
        let (_, structured) = fitted(
            Parts {
                output: CapturedOutput::whole(quotes.clone()),
                result: Some(Value::String(quotes.clone())),
                error: Some(quotes),
            },
            10_000,
        );
        assert!(
            structured["error"]
                .as_str()
                .unwrap()
                .contains("of the error cut here")
        );
    }

    #[test]
    fn a_worker_claiming_an_absurd_cut_is_shown_within_the_budget() {
        let mut buffer = crate::sandbox::outcome::OutputBuffer::new(8);
        buffer.push(crate::sandbox::proto::Stream::Stdout, "0123456789");
        buffer.end_with(u64::MAX, "the end\n".into());
        let output = buffer.finish();
        assert_eq!(output.cut, u64::MAX);
        let (text, _) = fitted(
            Parts {
                output,
                result: None,
                error: None,
            },
            4000,
        );
        assert!(
            text.starts_with("01234567\n[... ") && text.ends_with("the end\n"),
            "{text}"
        );
    }

    #[test]
    fn small_parts_keep_all_they_need() {
        assert_eq!(shares([10, 1000, 1000], 510), [10, 250, 250]);
        assert_eq!(shares([0, 0, 5000], 300), [0, 0, 300]);
        assert_eq!(shares([7, 8, 9], 100), [7, 8, 9]);
    }
}
