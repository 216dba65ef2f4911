//! Content blocks as the protocol shapes them, for the two checkpoints every block passes on
//! its way to the client (personal data, `pii`, and the reply budget, `front`): where a block
//! keeps its media payload (base64 data, never text to scan), and what the rest of it weighs.

use rmcp::model::ContentBlock;
use serde_json::Value;

/// Where a block (as JSON) keeps its media payload: `data` of an image or audio block,
/// `resource.blob` of an embedded binary resource.
fn payload_slot(block: &mut Value) -> Option<&mut Value> {
    let kind = block.get("type")?.as_str()?;
    match kind {
        "image" | "audio" => block.get_mut("data"),
        "resource" => block.get_mut("resource")?.get_mut("blob"),
        _ => None,
    }
}

/// Takes a block's media payload out, leaving null in its place.
pub(crate) fn take_payload(block: &mut Value) -> Option<Value> {
    payload_slot(block).map(Value::take)
}

/// Puts back what [`take_payload`] took.
pub(crate) fn restore_payload(block: &mut Value, payload: Option<Value>) {
    if let (Some(payload), Some(slot)) = (payload, payload_slot(block)) {
        *slot = payload;
    }
}

/// The bytes of a block's compact JSON but its media payload: what a client reads of it as
/// text (a text block's text, a resource's URI and MIME type, annotations, `_meta`).
pub(crate) fn fields_bytes(block: &ContentBlock) -> usize {
    let Ok(mut value) = serde_json::to_value(block) else {
        return 0;
    };
    take_payload(&mut value);
    serde_json::to_vec(&value).map_or(0, |v| v.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_payload_is_taken_out_and_put_back() {
        let mut image = json!({"type": "image", "data": "aGk=", "mimeType": "image/png"});
        let taken = take_payload(&mut image);
        assert_eq!(image["data"], Value::Null);
        restore_payload(&mut image, taken);
        assert_eq!(image["data"], "aGk=");
        let mut resource = json!({"type": "resource", "resource": {"uri": "x:a", "blob": "aGk="}});
        assert_eq!(take_payload(&mut resource), Some(json!("aGk=")));
        let mut text = json!({"type": "text", "text": "aGk="});
        assert_eq!(take_payload(&mut text), None);
        assert_eq!(text["text"], "aGk=");
    }

    #[test]
    fn fields_weigh_all_but_the_payload() {
        let uri = format!("x:{}", "U".repeat(1000));
        let block: ContentBlock = serde_json::from_value(
            json!({"type": "resource", "resource": {"uri": uri, "blob": "aGk=".repeat(100)}}),
        )
        .unwrap();
        let bytes = fields_bytes(&block);
        assert!((1000..1100).contains(&bytes), "{bytes}");
    }
}
