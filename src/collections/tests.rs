//! The collections' unit tests.

use super::*;
use rusqlite::types::Value;
use rusqlite::Connection;

/// A declaration the tests know to be valid.
fn declared(name: &str, fields: Vec<(String, FieldType)>) -> rusqlite::Result<Collection> {
    Collection::new(name, fields).ok_or(rusqlite::Error::InvalidQuery)
}

fn orders() -> rusqlite::Result<Schema> {
    Ok(Schema {
        collections: vec![declared(
            "orders",
            vec![
                ("status".into(), FieldType::Text),
                ("total".into(), FieldType::Real),
            ],
        )?],
    })
}

fn put(id: &str, status: Option<&str>, total: f64) -> DocOp {
    DocOp {
        coll: 0,
        id: id.into(),
        put: Some(DocPut {
            tag: 1,
            doc: id.as_bytes().to_vec(),
            columns: vec![
                status.map_or(Value::Null, |s| Value::Text(s.into())),
                Value::Real(total),
            ],
        }),
    }
}

fn text(s: &str) -> Value {
    Value::Text(s.into())
}

fn ids(rows: &[DocRow]) -> Vec<&str> {
    rows.iter().map(|r| r.id.as_str()).collect()
}

fn write(
    conn: &Connection,
    schema: &Schema,
    tables: &mut Tables,
    ops: Vec<DocOp>,
) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN")?;
    apply(conn, schema, tables, &DocChanges { clear: false, ops })?;
    conn.execute_batch("COMMIT")
}

#[test]
fn names_that_could_escape_their_quotes_are_refused() {
    assert!(valid_name("orders_2"));
    for bad in ["", "a\"b", "a b", "1a", "a;drop", "é", &"x".repeat(65)] {
        assert!(!valid_name(bad), "{bad:?}");
    }
    assert!(Collection::new("x", vec![("a".into(), FieldType::Text); 2]).is_none());
}

#[test]
fn finds_by_declared_fields_with_null_aware_equality_and_id_ties() -> rusqlite::Result<()> {
    let conn = Connection::open_in_memory()?;
    let schema = orders()?;
    let mut tables = Tables::default();
    write(
        &conn,
        &schema,
        &mut tables,
        vec![
            put("b", Some("open"), 5.0),
            put("a", Some("open"), 5.0),
            put("c", None, 1.0),
            put("d", Some("shipped"), 9.5),
        ],
    )?;
    let c = &schema.collections[0];
    let q = |conds: Vec<Cond>, order, desc, limit| Query {
        conds,
        order,
        desc,
        limit,
    };
    let eq = |v: Value| Cond {
        field: 0,
        op: CmpOp::Eq,
        values: vec![v],
    };
    let open = find(
        &conn,
        c,
        &tables,
        &q(vec![eq(text("open"))], None, false, None),
    )?;
    assert_eq!(ids(&open), ["a", "b"]);
    let missing = find(
        &conn,
        c,
        &tables,
        &q(vec![eq(Value::Null)], None, false, None),
    )?;
    assert_eq!(ids(&missing), ["c"]);
    let ne = Cond {
        field: 0,
        op: CmpOp::Ne,
        values: vec![text("open")],
    };
    let not_open = find(&conn, c, &tables, &q(vec![ne], None, false, None))?;
    assert_eq!(ids(&not_open), ["c", "d"], "!= includes the missing field");
    let by_total = find(&conn, c, &tables, &q(vec![], Some(1), true, Some(3)))?;
    assert_eq!(
        ids(&by_total),
        ["d", "b", "a"],
        "ties by id, same direction"
    );
    let inn = Cond {
        field: 1,
        op: CmpOp::In,
        values: vec![Value::Real(1.0), Value::Real(9.5)],
    };
    assert_eq!(count(&conn, c, &tables, &[inn])?, 2);
    Ok(())
}

#[test]
fn an_overlay_is_read_and_then_gone() -> rusqlite::Result<()> {
    let conn = Connection::open_in_memory()?;
    let schema = orders()?;
    let mut tables = Tables::default();
    write(
        &conn,
        &schema,
        &mut tables,
        vec![put("a", Some("open"), 1.0)],
    )?;
    let c = &schema.collections[0];
    let overlay = DocChanges {
        clear: false,
        ops: vec![
            put("b", Some("open"), 2.0),
            DocOp {
                coll: 0,
                id: "a".into(),
                put: None,
            },
        ],
    };
    let seen = with_overlay(&conn, &schema, &tables, &overlay, |t| {
        find(&conn, c, t, &Query::default())
    })?;
    assert_eq!(ids(&seen), ["b"]);
    let after = find(&conn, c, &tables, &Query::default())?;
    assert_eq!(ids(&after), ["a"]);
    // An overlay on a file without the table creates it only for the read.
    let empty = Connection::open_in_memory()?;
    let none = Tables::default();
    let seen = with_overlay(&empty, &schema, &none, &overlay, |t| {
        count(&empty, c, t, &[])
    })?;
    assert_eq!(seen, 1);
    assert!(!Tables::read(&empty)?.has("orders"));
    Ok(())
}

#[test]
fn a_field_declared_later_is_reported_for_backfill_and_a_dropped_one_kept() -> rusqlite::Result<()>
{
    let conn = Connection::open_in_memory()?;
    let v1 = orders()?;
    let mut tables = Tables::default();
    write(&conn, &v1, &mut tables, vec![put("a", Some("open"), 1.0)])?;
    let v2 = Schema {
        collections: vec![declared(
            "orders",
            vec![
                ("total".into(), FieldType::Real),
                ("region".into(), FieldType::Text),
            ],
        )?],
    };
    let (todo, gone) = reconcile(&conn, &v2, &tables)?;
    assert_eq!(
        todo,
        vec![Backfill {
            coll: 0,
            fields: vec![1]
        }]
    );
    assert_eq!(gone, vec![("orders".to_string(), "status".to_string())]);
    conn.execute_batch("BEGIN")?;
    deactivate(&conn, &gone)?;
    backfill(
        &conn,
        &v2.collections[0],
        &[1],
        &["a".to_string()],
        &[text("eu")],
    )?;
    conn.execute_batch("COMMIT")?;
    let (todo, gone) = reconcile(&conn, &v2, &tables)?;
    assert!(todo.is_empty() && gone.is_empty());
    let kept: String = conn.query_row("SELECT \"f_status\" FROM \"c_orders\"", [], |r| r.get(0))?;
    assert_eq!(kept, "open");
    let region = Cond {
        field: 1,
        op: CmpOp::Eq,
        values: vec![text("eu")],
    };
    assert_eq!(count(&conn, &v2.collections[0], &tables, &[region])?, 1);
    // Declared again, the dropped field is filled again.
    let (todo, _) = reconcile(&conn, &v1, &tables)?;
    assert_eq!(
        todo,
        vec![Backfill {
            coll: 0,
            fields: vec![0]
        }]
    );
    Ok(())
}

#[test]
fn column_values_round_trip_their_encoding() {
    let mut buf = vec![0u8, 1];
    buf.extend(7i64.to_le_bytes());
    buf.push(2);
    buf.extend(2.5f64.to_le_bytes());
    buf.push(3);
    buf.extend(3u32.to_le_bytes());
    buf.extend(b"abc");
    assert_eq!(
        decode_values(&buf),
        Ok(vec![
            Value::Null,
            Value::Integer(7),
            Value::Real(2.5),
            Value::Text("abc".into())
        ])
    );
    assert!(decode_values(&[3, 9, 0, 0, 0, b'a']).is_err());
    assert!(decode_values(&[9]).is_err());
}
