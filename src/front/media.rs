//! Media an execution returns: images, audio and binary embedded resources found in the
//! returned value (made in code by `image(...)`, or a downstream tool's content blocks passed
//! on) leave the value and reach the client as content blocks of their own, so that the model
//! sees an image as an image rather than as base64 text. Together they may take at most
//! `media_limit_bytes` (decoded); a block past it, or one whose data is not valid base64 of the
//! kind it claims, stays out and is named in the value instead. Text is the budget's (`budget`).

use base64::Engine;
use rmcp::model::ContentBlock;
use serde_json::{Map, Value};

/// How deep in the returned value blocks are looked for (the value itself is depth 0: a block
/// returned alone, in an array, or in a downstream result's `content` array).
const MAX_DEPTH: usize = 4;
/// At most this many blocks leave one value; further ones stay in it.
const MAX_BLOCKS: usize = 16;

/// Takes the media blocks out of `value`, each replaced by a short note, within `limit` decoded
/// bytes; returns them in the order found. `first_index` is the content index the first one
/// will have in the reply (after its text block).
pub(super) fn take_blocks(
    value: &mut Value,
    limit: usize,
    first_index: usize,
) -> Vec<ContentBlock> {
    let mut taken = Taken {
        blocks: Vec::new(),
        bytes: 0,
        limit,
        first_index,
    };
    taken.visit(value, 0);
    taken.blocks
}

struct Taken {
    blocks: Vec<ContentBlock>,
    bytes: usize,
    limit: usize,
    first_index: usize,
}

impl Taken {
    fn visit(&mut self, value: &mut Value, depth: usize) {
        if self.blocks.len() >= MAX_BLOCKS {
            return;
        }
        if let Some(media) = Media::of(value) {
            *value = Value::String(self.take(media));
            return;
        }
        if depth >= MAX_DEPTH {
            return;
        }
        match value {
            Value::Array(items) => items.iter_mut().for_each(|v| self.visit(v, depth + 1)),
            Value::Object(map) => map.values_mut().for_each(|v| self.visit(v, depth + 1)),
            _ => {}
        }
    }

    /// Sends the block when it fits; the note that takes its place in the value.
    fn take(&mut self, media: Media) -> String {
        let Media {
            kind,
            mime_type,
            bytes,
            block,
        } = media;
        if self.bytes + bytes > self.limit {
            return format!(
                "[{kind} {mime_type}, {bytes} bytes: not sent, over the reply's media limit of {} bytes ({} already used)]",
                self.limit, self.bytes
            );
        }
        self.bytes += bytes;
        self.blocks.push(block);
        format!(
            "[{kind} {mime_type}, {bytes} bytes: sent as content block {}]",
            self.first_index + self.blocks.len() - 1
        )
    }
}

/// One media block recognised in a value.
struct Media {
    kind: &'static str,
    mime_type: String,
    /// Decoded size.
    bytes: usize,
    block: ContentBlock,
}

impl Media {
    /// `{type: "image"|"audio", data, mimeType}` with base64 `data` and a MIME type of its kind,
    /// or `{type: "resource", resource: {uri, blob, mimeType?}}` with base64 `blob`.
    fn of(value: &Value) -> Option<Media> {
        let map = value.as_object()?;
        let kind = match map.get("type")?.as_str()? {
            "image" => "image",
            "audio" => "audio",
            "resource" => "resource",
            _ => return None,
        };
        if !only_keys(
            map,
            &[
                "type",
                "data",
                "mimeType",
                "resource",
                "annotations",
                "_meta",
            ],
        ) {
            return None;
        }
        let (data, mime_type) = if kind == "resource" {
            let resource = map.get("resource")?.as_object()?;
            resource.get("uri")?.as_str()?;
            let mime = resource
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or("application/octet-stream");
            (resource.get("blob")?.as_str()?, mime)
        } else {
            let mime = map.get("mimeType")?.as_str()?;
            let (top, sub) = mime.split_once('/')?;
            if top != kind || sub.is_empty() {
                return None;
            }
            (map.get("data")?.as_str()?, mime)
        };
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .ok()?
            .len();
        let block = serde_json::from_value(value.clone()).ok()?;
        Some(Media {
            kind,
            mime_type: mime_type.to_string(),
            bytes,
            block,
        })
    }
}

fn only_keys(map: &Map<String, Value>, allowed: &[&str]) -> bool {
    map.keys().all(|k| allowed.contains(&k.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn png() -> Value {
        json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
    }

    #[test]
    fn an_image_anywhere_near_the_top_leaves_the_value() {
        let mut value = json!({"content": [{"type": "text", "text": "caption"}, png()]});
        let blocks = take_blocks(&mut value, 1 << 20, 1);
        assert_eq!(blocks.len(), 1);
        assert!(matches!(blocks[0], ContentBlock::Image(_)));
        assert_eq!(
            value["content"][1],
            "[image image/png, 8 bytes: sent as content block 1]"
        );
        let mut alone = png();
        assert_eq!(take_blocks(&mut alone, 1 << 20, 1).len(), 1);
    }

    #[test]
    fn blocks_over_the_limit_or_malformed_stay() {
        let mut value = json!([png(), png()]);
        let blocks = take_blocks(&mut value, 10, 1);
        assert_eq!(blocks.len(), 1);
        assert!(
            value[1]
                .as_str()
                .unwrap()
                .contains("not sent, over the reply's media limit")
        );
        let mut bad = json!([
            {"type": "image", "data": "not base64!", "mimeType": "image/png"},
            {"type": "image", "data": "aGk=", "mimeType": "text/html"},
            {"type": "image", "data": "aGk=", "mimeType": "image/png", "extra": 1},
        ]);
        let before = bad.clone();
        assert!(take_blocks(&mut bad, 1 << 20, 1).is_empty());
        assert_eq!(bad, before);
    }

    #[test]
    fn binary_resources_and_audio_are_blocks_too() {
        let mut value = json!([
            {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "aGk=", "mimeType": "application/pdf"}},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "stays"}},
        ]);
        let blocks = take_blocks(&mut value, 1 << 20, 1);
        assert_eq!(blocks.len(), 2);
        assert_eq!(
            value[1],
            "[resource application/pdf, 2 bytes: sent as content block 2]"
        );
        assert_eq!(value[2]["resource"]["text"], "stays");
    }

    #[test]
    fn depth_and_count_are_bounded() {
        let mut deep = json!({"a": {"b": {"c": {"d": {"e": png()}}}}});
        assert!(take_blocks(&mut deep, 1 << 20, 1).is_empty());
        let mut many = Value::Array(vec![png(); 40]);
        assert_eq!(take_blocks(&mut many, 1 << 20, 1).len(), MAX_BLOCKS);
    }
}
