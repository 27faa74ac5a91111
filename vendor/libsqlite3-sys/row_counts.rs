// durable-workers: rows read and rows written per statement.
//
// Durable Object SQL reports `cursor.rowsRead` and `cursor.rowsWritten`, and
// Cloudflare counts them inside SQLite's bytecode engine: a row each time a
// cursor lands on one (a rewind, a step, a seek, a `count(*)` over the whole
// b-tree), an entry each time a table or index b-tree is written (not the
// engine's temporary ones), a row for each delete that counts as a change.
// Stock SQLite has no such counters, so this build adds them to a copy of
// the amalgamation, at the same places, and one function to read them:
//
//   void sqlite3_dw_stmt_rows(sqlite3_stmt*, sqlite3_uint64 *pRead,
//                             sqlite3_uint64 *pWritten, int reset);
//
// Each edit inserts lines between two runs of text that must occur together
// exactly once in the amalgamation; a SQLite upgrade that moves one stops
// the build here, naming it, instead of miscounting.

/// (what the edit is for, the text before the insertion, the text after it, the lines inserted)
const EDITS: &[(&str, &str, &str, &str)] = &[
    (
        "the counters, beside stmt_status's",
        "  u32 aCounter[9];        /* Counters used by sqlite3_stmt_status() */\n",
        "",
        "  u64 aDwRows[2];         /* durable-workers: rows read, rows written */\n",
    ),
    (
        "the counters survive a statement prepared again",
        "  memcpy(pB->aCounter, pA->aCounter, sizeof(pB->aCounter));\n",
        "",
        "  memcpy(pB->aDwRows, pA->aDwRows, sizeof(pB->aDwRows));\n",
    ),
    (
        "the function that reads them, after sqlite3_stmt_status",
        "  return (int)v;\n}\n",
        "\n/*\n** Return the SQL associated with a prepared statement\n*/",
        "\n/* durable-workers: the rows a statement read and wrote (row_counts.rs). */\n\
#define DW_READ(P, N) ((P)->aDwRows[0] += (u64)(N))\n\
#define DW_WROTE(P, C) do{ if( !(C)->isEphemeral ) (P)->aDwRows[1]++; }while(0)\n\
SQLITE_API void sqlite3_dw_stmt_rows(\n\
  sqlite3_stmt *pStmt,\n\
  sqlite3_uint64 *pRead,\n\
  sqlite3_uint64 *pWritten,\n\
  int reset\n\
){\n\
  Vdbe *v = (Vdbe*)pStmt;\n\
  if( v==0 ){ *pRead = 0; *pWritten = 0; return; }\n\
  *pRead = v->aDwRows[0];\n\
  *pWritten = v->aDwRows[1];\n\
  if( reset ){ v->aDwRows[0] = 0; v->aDwRows[1] = 0; }\n\
}\n",
    ),
    (
        "OP_Count: every entry of the b-tree",
        "    rc = sqlite3BtreeCount(db, pCrsr, &nEntry);\n",
        "    if( rc ) goto abort_due_to_error;\n",
        "    DW_READ(p, nEntry);\n",
    ),
    (
        "OP_SeekGE/GT/LE/LT: the row a seek lands on",
        "      goto seek_not_found;\n    }\n  }\n",
        "#ifdef SQLITE_TEST\n  sqlite3_search_count++;\n#endif\n  if( oc>=OP_SeekGE ){",
        "  DW_READ(p, 1);\n",
    ),
    (
        "OP_SeekRowid/NotExists: the row looked up",
        "  pC->seekResult = res;\n",
        "  if( res!=0 ){\n    assert( rc==SQLITE_OK );\n    if( pOp->p2==0 ){",
        "  DW_READ(p, 1);\n",
    ),
    (
        "OP_Insert: a table row written",
        "  assert( (pOp->p5 & OPFLAG_LASTROWID)==0 || (pOp->p5 & OPFLAG_NCHANGE)!=0 );\n",
        "  if( pOp->p5 & OPFLAG_NCHANGE ){\n    p->nChange++;\n    if( pOp->p5 & OPFLAG_LASTROWID ) db->lastRowid = x.nKey;\n",
        "  DW_WROTE(p, pC);\n",
    ),
    (
        "OP_Delete: a row deleted that counts as a change",
        "  if( opflags & OPFLAG_NCHANGE ){\n    p->nChange++;\n",
        "    if( db->xUpdateCallback",
        "    DW_WROTE(p, pC);\n",
    ),
    (
        "OP_Last: the row it lands on",
        "  rc = sqlite3BtreeLast(pCrsr, &res);\n  pC->nullRow = (u8)res;\n  pC->deferredMoveto = 0;\n  pC->cacheStatus = CACHE_STALE;\n  if( rc ) goto abort_due_to_error;\n",
        "",
        "  DW_READ(p, 1);\n",
    ),
    (
        "OP_Rewind: the first row (or the end of an empty b-tree)",
        "  if( rc ) goto abort_due_to_error;\n  pC->nullRow = (u8)res;\n",
        "  if( pOp->p2>0 ){",
        "  DW_READ(p, 1);\n",
    ),
    (
        "OP_Next/Prev: each further row",
        "    p->aCounter[pOp->p5]++;\n",
        "",
        "    DW_READ(p, 1);\n",
    ),
    (
        "OP_IdxInsert: an index entry written",
        "  if( pOp->p5 & OPFLAG_NCHANGE ) p->nChange++;\n",
        "  assert( pC->eCurType==CURTYPE_BTREE );\n  assert( pC->isTable==0 );\n",
        "  DW_WROTE(p, pC);\n",
    ),
    (
        "OP_Clear: every row of a table emptied at once (DELETE without WHERE)",
        "  if( pOp->p3 ){\n    p->nChange += nChange;\n",
        "",
        "    p->aDwRows[1] += (u64)nChange;\n",
    ),
    (
        "OP_VNext: each further row of a virtual table",
        "  rc = pModule->xNext(pCur->uc.pVCur);\n  sqlite3VtabImportErrmsg(p, pVtab);\n  if( rc ) goto abort_due_to_error;\n",
        "",
        "  DW_READ(p, 1);\n",
    ),
    (
        "OP_VUpdate: a virtual table row written",
        "    }else{\n",
        "      p->nChange++;\n    }\n    if( rc ) goto abort_due_to_error;\n",
        "      p->aDwRows[1]++;\n",
    ),
];

/// The amalgamation `src` with the counters added.
pub fn apply(src: &str) -> String {
    let mut out = src.to_owned();
    for (what, before, after, lines) in EDITS {
        let anchor = format!("{before}{after}");
        let found = out.matches(anchor.as_str()).count();
        assert!(
            found == 1,
            "durable-workers row counts: the text around the edit for {what} occurs {found} times in sqlite3.c \
             (once expected): a SQLite upgrade moved it; place the edit again (vendor/libsqlite3-sys/row_counts.rs)"
        );
        let at = out.find(anchor.as_str()).map_or(0, |i| i + before.len());
        out.insert_str(at, lines);
    }
    out
}
