"""The risk classifier, one safety rule per row: (sql, expected risk, why)."""

from __future__ import annotations

import gc
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from bot.sql.functions import (
    CONTEXT_KEYWORDS,
    NEVER_STORED,
    PAREN_KEYWORDS,
    SAFE_FUNCTIONS,
    SIDE_EFFECT_FUNCTIONS,
)
from bot.sql.risk import Classification, Risk, Statement, TableRef, classify

R, W, D, T = Risk.READ_ONLY, Risk.WRITE, Risk.DDL, Risk.TRANSACTION

READS = [
    ("SELECT 1", "the simplest query"),
    ("select * from orders where id = 7", "lower case keywords"),
    (
        "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id "
        "WHERE o.created_at > '2024-01-01' ORDER BY o.id DESC LIMIT 10",
        "a join with a literal",
    ),
    ("SELECT REPLACE(a, 'x', 'y') FROM t", "REPLACE() is a string function"),
    ("SELECT REPLACE (a, 'x', 'y') FROM t", "REPLACE () with a space is still the function"),
    ("SELECT INSERT('abc', 1, 1, 'z')", "INSERT() is a string function"),
    ("SELECT * FROM updates", "a table named updates"),
    ("SELECT * FROM deleted_rows", "a table whose name starts with a keyword"),
    ("SELECT `drop` FROM t", "a backquoted column named drop"),
    ("SELECT `update`, `delete`, `into` FROM t", "backquoted reserved words"),
    ("SELECT t.delete FROM t", "a reserved word after a dot is a column name"),
    ("SELECT 'DROP TABLE t'", "DROP TABLE inside a literal"),
    ('SELECT "DELETE FROM t; DROP TABLE u"', "statements inside a double-quoted literal"),
    ("SELECT 1 -- DROP TABLE t", "DROP TABLE in a -- comment"),
    ("SELECT 1 # DROP", "DROP in a # comment"),
    ("SELECT 1 /* ; DROP TABLE t */", "DROP TABLE in a block comment"),
    ("/* report */ SELECT 1", "a leading comment"),
    ("SELECT for_update FROM t", "a column named for_update"),
    ("SELECT * FROM t WHERE note = 'for update'", "'for update' in a literal"),
    ("SELECT sleep_count FROM t", "a column whose name starts with sleep"),
    ("SELECT update_time, last_insert FROM t", "columns that contain keywords"),
    ("SELECT a FROM t WHERE b = 'it''s; fine'", "a doubled quote and a semicolon in a literal"),
    ("SELECT 'a\\\\' AS backslash", "an escaped backslash is unambiguous"),
    ("SELECT 1--1", "--1 without a space is arithmetic, not a comment"),
    ("SELECT 'a' 'b'", "adjacent literals"),
    ("SELECT _utf8mb4'abc', N'x', X'41', 0x41, b'01'", "literal prefixes"),
    ("SHOW TABLES", "SHOW lists tables"),
    ("SHOW FULL TABLES FROM shop LIKE 'ord%'", "SHOW with FROM and LIKE"),
    ("SHOW COLUMNS FROM t", "SHOW COLUMNS"),
    ("SHOW FULL COLUMNS FROM t", "SHOW FULL COLUMNS"),
    ("SHOW CREATE TABLE t", "SHOW CREATE TABLE reads a definition"),
    ("SHOW CREATE PROCEDURE p", "SHOW CREATE PROCEDURE reads a definition"),
    ("SHOW PROCEDURE STATUS", "SHOW PROCEDURE STATUS is not SELECT … PROCEDURE"),
    ("SHOW PROCESSLIST", "SHOW PROCESSLIST"),
    ("SHOW FULL PROCESSLIST", "SHOW FULL PROCESSLIST"),
    ("SHOW VARIABLES LIKE 'max%'", "SHOW VARIABLES"),
    ("SHOW GLOBAL STATUS", "SHOW GLOBAL STATUS only reads"),
    ("SHOW INDEX FROM t", "SHOW INDEX"),
    ("SHOW TABLE STATUS", "SHOW TABLE STATUS"),
    ("SHOW DATABASES", "SHOW DATABASES"),
    ("SHOW GRANTS FOR CURRENT_USER()", "SHOW GRANTS with a built-in call"),
    ("SHOW ENGINE INNODB STATUS", "SHOW ENGINE"),
    ("SHOW SLAVE STATUS", "SHOW SLAVE STATUS"),
    ("SHOW WARNINGS", "SHOW WARNINGS"),
    ("SHOW EXPLAIN FOR 5", "MariaDB's SHOW EXPLAIN"),
    ("DESCRIBE t", "DESCRIBE a table"),
    ("DESC t", "DESC a table"),
    ("DESCRIBE shop.orders", "DESCRIBE a qualified table"),
    ("DESCRIBE t id", "DESCRIBE one column"),
    ("EXPLAIN t", "EXPLAIN of a table is DESCRIBE"),
    ("EXPLAIN SELECT * FROM t WHERE id = 1", "EXPLAIN shows a plan without running it"),
    ("EXPLAIN FORMAT=JSON SELECT * FROM t", "EXPLAIN FORMAT=JSON"),
    ("EXPLAIN FORMAT = TREE SELECT 1", "EXPLAIN FORMAT = TREE"),
    ("EXPLAIN EXTENDED SELECT 1", "old EXPLAIN EXTENDED"),
    ("DESC SELECT * FROM t", "DESC of a query"),
    ("EXPLAIN FOR CONNECTION 42", "EXPLAIN FOR CONNECTION"),
    (
        "SELECT a, ROW_NUMBER() OVER (PARTITION BY b ORDER BY c) AS rn, "
        "LAG(a) OVER w FROM t WINDOW w AS (ORDER BY c)",
        "window functions and a named window",
    ),
    ("WITH x AS (SELECT 1 AS a) SELECT * FROM x", "a CTE"),
    (
        "WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5) "
        "SELECT * FROM c",
        "a recursive CTE with a column list is not a function call",
    ),
    ("WITH `c` (n) AS (SELECT 1) SELECT * FROM `c`", "a quoted CTE name with a column list"),
    ("SELECT * FROM (SELECT 1 AS a) AS d (x)", "a derived table with a column list"),
    ("SELECT a FROM t UNION SELECT b FROM u", "UNION"),
    ("(SELECT 1) UNION ALL (SELECT 2) ORDER BY 1", "parenthesised UNION parts"),
    ("SELECT 1 INTERSECT SELECT 1", "INTERSECT"),
    ("SELECT 1 EXCEPT SELECT 2", "EXCEPT"),
    (
        "SELECT JSON_EXTRACT(doc, '$.a'), doc->'$.b', doc->>'$.c', JSON_OBJECT('k', 1), "
        "JSON_ARRAYAGG(x) FROM t GROUP BY y",
        "JSON functions and operators",
    ),
    (
        "SELECT * FROM JSON_TABLE('[1,2]', '$[*]' COLUMNS (x INT PATH '$')) AS jt",
        "JSON_TABLE with typed columns",
    ),
    ("SELECT * FROM t WHERE id IN (SELECT t_id FROM u WHERE u.ok)", "an IN subquery"),
    ("SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.t = t.id)", "an EXISTS subquery"),
    ("SELECT (SELECT MAX(a) FROM u) AS m FROM t", "a scalar subquery"),
    ("SELECT * FROM (SELECT a FROM t) AS d", "a derived table"),
    (
        "SELECT CASE WHEN a > 1 THEN 'x' ELSE 'y' END, IF(b, 1, 2), COALESCE(c, 0) FROM t",
        "conditional functions",
    ),
    (
        "SELECT CAST(a AS DECIMAL(10,2)), CONVERT(b, CHAR(5)), CAST(c AS DATETIME(6)) FROM t",
        "type names inside CAST and CONVERT",
    ),
    ("SELECT CONVERT(a USING utf8mb4), CHAR(65 USING ascii) FROM t", "USING in conversions"),
    ("SELECT a, COUNT(*) FROM t GROUP BY a WITH ROLLUP", "WITH ROLLUP"),
    ("SELECT * FROM t LIMIT 10 OFFSET 20", "LIMIT and OFFSET"),
    ("SELECT * FROM t USE INDEX (idx_a) WHERE a = 1", "an index hint"),
    ("SELECT * FROM t FORCE INDEX (PRIMARY) WHERE id = 1", "FORCE INDEX on PRIMARY"),
    ("SELECT * FROM t PARTITION (p0)", "a partition list"),
    ("SELECT * FROM t WHERE MATCH (a) AGAINST ('x' IN BOOLEAN MODE)", "full-text search"),
    ("SELECT * FROM t WHERE a REGEXP '^x' AND b NOT LIKE 'y%'", "pattern operators"),
    ("SELECT DATE_ADD(NOW(), INTERVAL 1 DAY), DATE_FORMAT(d, '%Y') FROM t", "date functions"),
    ("SELECT EXTRACT(YEAR FROM d), TRIM(LEADING 'x' FROM s), POSITION('a' IN s) FROM t", "odd"),
    ("SELECT GROUP_CONCAT(DISTINCT a ORDER BY a SEPARATOR ',') FROM t", "GROUP_CONCAT"),
    ("SELECT COUNT(DISTINCT a), SUM(b), AVG(c), MIN(d), MAX(e) FROM t", "aggregates"),
    ("TABLE t", "MySQL's TABLE statement"),
    ("VALUES ROW(1, 2), ROW(3, 4)", "MySQL's VALUES statement"),
    ("SELECT /*+ MAX_EXECUTION_TIME(1000) */ * FROM t", "an optimizer hint is a comment"),
    ("SELECT /*+ BKA(t1) NO_ICP(t2) */ * FROM t1 JOIN t2", "optimizer hints with names"),
    ("SELECT LASTVAL(s)", "LASTVAL only reads the session's last value"),
    ("SELECT PREVIOUS VALUE FOR s", "PREVIOUS VALUE FOR only reads"),
    ("SELECT IS_FREE_LOCK('x'), IS_USED_LOCK('x')", "asking about a lock takes none"),
    ("SELECT UUID(), UUID_SHORT(), RAND()", "generated values change no data"),
    ("SELECT LAST_INSERT_ID(), FOUND_ROWS(), ROW_COUNT()", "session information functions"),
    ("SELECT DATABASE(), CURRENT_USER(), VERSION(), CONNECTION_ID()", "information functions"),
    ("SELECT @@version, @@session.sql_mode", "reading system variables"),
    ("SELECT @counter", "reading a user variable"),
    ("SELECT ST_AsText(ST_GeomFromText('POINT(1 1)'))", "spatial functions"),
    ("SELECT a FROM t1 STRAIGHT_JOIN t2 ON t1.a = t2.b", "STRAIGHT_JOIN"),
    ("SELECT SQL_CALC_FOUND_ROWS * FROM t LIMIT 1", "a SELECT modifier"),
    ("SELECT * FROM t FOR SYSTEM_TIME AS OF TIMESTAMP '2024-01-01 00:00:00'", "a temporal read"),
    ("SELECT 1;", "a trailing semicolon"),
    ("SELECT 1;;", "an empty statement after it"),
    ("SELECT 1; SELECT 2", "two reads"),
    ("SELECT 'a;b'; SELECT `c;d` FROM t", "semicolons in a literal and an identifier"),
    ("SELECT a FROM t -- ends with a comment", "a trailing comment"),
    ("SELECT 1;\n-- just a trailing comment\n", "a comment-only tail is dropped"),
    ("SELECT 'abc\\ndef'", "a backslash escape that is not a quote"),
    (
        "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()",
        "an information_schema query",
    ),
    (
        "SELECT PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY x) OVER () FROM t",
        "MariaDB's WITHIN GROUP",
    ),
    ("SELECT SUBSTRING(s FROM 2 FOR 3) FROM t", "FOR inside SUBSTRING is not a lock"),
    ("SELECT * FROM (VALUES ROW(1), ROW(2)) AS v (a)", "a VALUES derived table"),
    ("SELECT a FROM t WHERE (a, b) IN ((1, 2), (3, 4))", "row constructors"),
    ("SELECT 1 /* a /* b */ + 2", "block comments do not nest"),
    # Keywords before "(" are no calls, gap or not (reserved or keyword-only on MariaDB 10.11).
    ("SELECT * FROM t WHERE a IN (1,2) AND (b OR c)", "IN ( and AND ( are keywords, not calls"),
    ("SELECT ROW_NUMBER() OVER (ORDER BY a) FROM t", "OVER ( opens a window"),
    ("SELECT * FROM t JOIN u USING (id)", "USING ( lists join columns"),
    ("SELECT CAST(a AS CHAR) FROM t", "CAST( is the built-in, AS a keyword"),
    ("SELECT * FROM (SELECT 1) x", "FROM ( opens a derived table"),
    ("WITH x (a) AS (SELECT 1) SELECT * FROM x", "a CTE column list after a blank"),
    ("SELECT a FROM t WHERE NOT (a = 1) OR EXISTS (SELECT 1)", "NOT ( and EXISTS ("),
    ("SELECT CASE WHEN (a > 1) THEN (1) ELSE (0) END FROM t", "WHEN ( THEN ( ELSE ("),
    ("SELECT a FROM t GROUP BY (a) ORDER BY (a)", "BY ( is a keyword"),
    ("SELECT a FROM t WHERE a = ANY (SELECT b FROM u)", "ANY ( is keyword-only on MariaDB"),
    ("SELECT a FROM t WHERE a > SOME (SELECT b FROM u)", "SOME ( is keyword-only on MariaDB"),
    (
        "SELECT IF (a, 1, 2), LEFT (b, 2), REPLACE (b, 'x', 'y') FROM t",
        "reserved words are never stored-function names, so a gap is harmless",
    ),
    (
        "SELECT CAST(a AS DATETIME (6)), CONVERT(b, CHAR (5)) FROM t",
        "type names before ( are keyword-only",
    ),
    ("SELECT * FROM t FORCE INDEX FOR JOIN (PRIMARY) WHERE id = 1", "an index hint FOR JOIN ("),
    ("SELECT a, MATCH(a) AGAINST('x') FROM t", "MATCH(…) AGAINST(…) without blanks"),
    (
        "SELECT * FROM t WHERE MATCH (a) AGAINST ('x' WITH QUERY EXPANSION)",
        "AGAINST right after MATCH (…) is full-text syntax, not a call",
    ),
    (
        "SELECT * FROM JSON_TABLE ('[{\"a\":[1]}]', '$[*]' COLUMNS (id FOR ORDINALITY, "
        "NESTED PATH '$.a[*]' COLUMNS (v INT PATH '$'))) AS jt",
        "JSON_TABLE with its COLUMNS clause, NESTED PATH inside",
    ),
    ("WITH sum (n) AS (SELECT 1) SELECT n FROM sum", "a CTE named like a built-in is no call"),
    (
        "WITH `get_lock` (n) AS (SELECT 1) SELECT n FROM `get_lock`",
        "a quoted CTE named like a side-effect function is no call",
    ),
    ("SELECT COUNT(*) FROM t AS count", "an alias named like the built-in it calls"),
    ("SELECT straße, COUNT(*) FROM t GROUP BY 1", "a name whose upper case is longer"),
    (
        "SELECT PREVIOUS VALUE FOR s, d.x FROM (SELECT 1) AS d (x)",
        "tree offsets still match after PREVIOUS VALUE FOR is rewritten",
    ),
]

WRITES = [
    ("SELECT * FROM t FOR UPDATE", "a locking read takes row locks"),
    ("SELECT * FROM t FOR SHARE", "FOR SHARE takes shared row locks"),
    ("SELECT * FROM t LOCK IN SHARE MODE", "LOCK IN SHARE MODE takes shared row locks"),
    ("SELECT * FROM t FOR UPDATE NOWAIT", "NOWAIT is part of a locking read"),
    ("SELECT * FROM t FOR SHARE SKIP LOCKED", "SKIP LOCKED is part of a locking read"),
    ("SELECT * FROM t FOR UPDATE OF t", "FOR UPDATE OF"),
    ("SELECT * FROM t FOR UPDATE WAIT 5", "MariaDB's FOR UPDATE WAIT"),
    ("select * from t for update", "a lower-case locking read"),
    ("SELECT * FROM t FOR/**/UPDATE", "a comment between FOR and UPDATE"),
    ("SELECT * FROM t FOR\n  UPDATE", "a newline between FOR and UPDATE"),
    ("SELECT * FROM t WHERE a IN (SELECT b FROM u FOR UPDATE)", "a locking subquery"),
    ("WITH c AS (SELECT * FROM t FOR UPDATE) SELECT * FROM c", "a locking CTE"),
    ("SELECT a FROM t UNION SELECT b FROM u FOR UPDATE", "a locking UNION part"),
    ("SELECT * FROM (SELECT * FROM t LOCK IN SHARE MODE) d", "a locking derived table"),
    ("WITH x AS (SELECT 1) UPDATE t SET a = 1", "a writable CTE: WITH … UPDATE"),
    ("WITH x AS (SELECT id FROM u) DELETE FROM t WHERE id IN (SELECT id FROM x)", "WITH … DELETE"),
    ("WITH x AS (SELECT 1 AS a) INSERT INTO t SELECT a FROM x", "WITH … INSERT"),
    ("SELECT * FROM t INTO OUTFILE '/tmp/t.csv'", "INTO OUTFILE writes a server file"),
    ("SELECT * INTO OUTFILE '/tmp/t.csv' FROM t", "INTO OUTFILE before FROM"),
    ("SELECT a FROM t INTO DUMPFILE '/tmp/a'", "INTO DUMPFILE writes a server file"),
    ("SELECT a INTO @v FROM t", "INTO @var assigns a variable"),
    ("SELECT a, b FROM t LIMIT 1 INTO @x, @y", "INTO @x, @y at the end"),
    ("SELECT * FROM t INTO/**/OUTFILE '/tmp/x'", "a comment between INTO and OUTFILE"),
    ("SELECT * FROM t INTO -- x\n OUTFILE '/tmp/x'", "a -- comment between INTO and OUTFILE"),
    ("SELECT * FROM t INTO # x\n OUTFILE '/tmp/x'", "a # comment between INTO and OUTFILE"),
    ("SELECT * FROM t INTO/*!*/OUTFILE '/tmp/x'", "an empty executable comment in between"),
    ("TABLE t INTO OUTFILE '/tmp/x'", "TABLE … INTO OUTFILE"),
    ("SELECT NEXTVAL(s)", "NEXTVAL advances a sequence"),
    ("SELECT SETVAL(s, 100)", "SETVAL sets a sequence"),
    ("SELECT NEXT VALUE FOR s", "NEXT VALUE FOR advances a sequence"),
    ("SELECT s.nextval", "Oracle-mode s.nextval advances a sequence"),
    ("SELECT GET_LOCK('x', 10)", "GET_LOCK takes a named lock"),
    ("SELECT RELEASE_LOCK('x')", "RELEASE_LOCK releases a named lock"),
    ("SELECT RELEASE_ALL_LOCKS()", "RELEASE_ALL_LOCKS releases every named lock"),
    ("SELECT SLEEP(10)", "SLEEP holds the connection"),
    ("SELECT sleep (10)", "SLEEP with a space before the parenthesis"),
    ("SELECT SLEEP/**/(10)", "SLEEP with a comment before the parenthesis"),
    ("SELECT * FROM t WHERE id = 1 AND SLEEP(5)", "SLEEP in a WHERE clause"),
    ("SELECT * FROM t WHERE a IN (SELECT SLEEP(1))", "SLEEP in a subquery"),
    ("SELECT BENCHMARK(1000000, MD5('x'))", "BENCHMARK burns CPU"),
    ("SELECT LOAD_FILE('/etc/passwd')", "LOAD_FILE reads a server file"),
    ("SELECT MASTER_POS_WAIT('bin.000001', 4)", "MASTER_POS_WAIT blocks"),
    ("SELECT SOURCE_POS_WAIT('bin.000001', 4)", "SOURCE_POS_WAIT blocks"),
    ("SELECT MASTER_GTID_WAIT('0-1-1')", "MASTER_GTID_WAIT blocks"),
    ("SELECT WAIT_FOR_EXECUTED_GTID_SET('x')", "WAIT_FOR_EXECUTED_GTID_SET blocks"),
    ("SELECT sys_exec('rm -rf /')", "sys_exec runs a shell command"),
    ("SELECT sys_eval('id')", "sys_eval runs a shell command"),
    ("SELECT shop.recalculate_totals(1)", "a schema-qualified stored function"),
    ("SELECT `shop`.`fn`(1)", "a quoted, qualified stored function"),
    ("SELECT `fn`(1)", "a quoted function name is a stored function"),
    ("SELECT my_function(a) FROM t", "an unknown function may be a stored function"),
    ("SELECT a FROM t ORDER BY purge_cache(a)", "an unknown function in ORDER BY"),
    ("SELECT @n := @n + 1 FROM t", ":= assigns a user variable"),
    ("SELECT a FROM t PROCEDURE ANALYSE()", "PROCEDURE runs over the result"),
    ("SELECT /*!40001 SQL_NO_CACHE */ * FROM t", "an executable comment is never read-only"),
    ("/*!40101 SET NAMES utf8mb4 */", "a mysqldump header runs a SET"),
    ("SELECT 1 /*!, SLEEP(5) */", "SLEEP hidden in an executable comment"),
    ("SELECT 1 /*M!100100 , SLEEP(5) */", "SLEEP hidden in a MariaDB executable comment"),
    ("SELECT 'it\\'s'", "a backslash-escaped quote depends on sql_mode"),
    ("SELECT 'abc", "an unterminated literal"),
    ("SELECT 1 /* never closed", "an unterminated comment"),
    ("SELECT `abc", "an unterminated identifier"),
    ("INSERT INTO t (a) VALUES (1)", "INSERT adds rows"),
    ("INSERT INTO t SET a = 1", "INSERT … SET"),
    ("INSERT IGNORE INTO t VALUES (1)", "INSERT IGNORE"),
    ("INSERT INTO t SELECT * FROM u", "INSERT … SELECT"),
    ("INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = 1", "ON DUPLICATE KEY UPDATE"),
    ("INSERT LOW_PRIORITY INTO t VALUES (1)", "INSERT LOW_PRIORITY"),
    ("INSERT INTO t VALUES (1) RETURNING id", "MariaDB's INSERT … RETURNING"),
    ("REPLACE INTO t VALUES (1)", "REPLACE deletes and re-inserts"),
    ("REPLACE INTO t SELECT * FROM u", "REPLACE … SELECT"),
    ("UPDATE t SET a = 1 WHERE id = 2", "UPDATE changes rows"),
    ("UPDATE t SET a = (SELECT MAX(b) FROM u)", "UPDATE with a subquery"),
    ("UPDATE a JOIN b ON a.id = b.id SET a.x = b.x", "a multi-table UPDATE"),
    ("UPDATE a, b SET a.x = 1, b.y = 2 WHERE a.id = b.id", "a comma multi-table UPDATE"),
    ("UPDATE LOW_PRIORITY IGNORE t SET a = 1", "UPDATE with modifiers"),
    ("DELETE FROM t WHERE id = 1", "DELETE removes rows"),
    ("DELETE FROM t ORDER BY id LIMIT 10", "DELETE with ORDER BY and LIMIT"),
    ("DELETE a, b FROM a JOIN b ON a.id = b.id", "a multi-table DELETE"),
    ("DELETE FROM a USING a JOIN b ON a.id = b.id", "DELETE … USING"),
    ("DELETE QUICK IGNORE FROM t", "DELETE with modifiers"),
    ("SET @a = 1", "SET of a user variable"),
    ("SET @autocommit = 0", "a user variable named autocommit is only a user variable"),
    ("SET GLOBAL max_connections = 10", "SET GLOBAL changes every connection"),
    ("SET PERSIST max_connections = 10", "SET PERSIST survives restarts"),
    ("SET SESSION sql_mode = ''", "SET SESSION"),
    ("SET @@session.sql_mode = 'ANSI'", "SET @@session"),
    ("SET NAMES utf8mb4", "SET NAMES"),
    ("SET CHARACTER SET utf8mb4", "SET CHARACTER SET"),
    ("SET sql_log_bin = 0", "SET sql_log_bin hides changes from replicas"),
    ("SET ROLE admin", "SET ROLE changes privileges"),
    ("SET STATEMENT max_statement_time = 1 FOR SELECT 1", "SET STATEMENT sets variables"),
    ("USE other_db", "USE switches the default database"),
    ("CALL refresh_totals()", "CALL runs a stored procedure"),
    ("CALL refresh_totals", "CALL without parentheses"),
    ("PREPARE s FROM 'SELECT 1'", "PREPARE stores a statement"),
    ("EXECUTE s", "EXECUTE runs a prepared statement"),
    ("EXECUTE s USING @a", "EXECUTE … USING"),
    ("EXECUTE IMMEDIATE 'SELECT 1'", "EXECUTE IMMEDIATE runs a statement"),
    ("DEALLOCATE PREPARE s", "DEALLOCATE PREPARE"),
    ("DROP PREPARE s", "DROP PREPARE is DEALLOCATE PREPARE"),
    ("DO 1", "DO evaluates for side effects"),
    ("DO SLEEP(1)", "DO SLEEP"),
    ("HANDLER t OPEN", "HANDLER opens a cursor"),
    ("HANDLER t READ FIRST", "HANDLER READ"),
    ("LOAD DATA INFILE '/tmp/x' INTO TABLE t", "LOAD DATA inserts rows"),
    ("LOAD DATA LOCAL INFILE 'x.csv' INTO TABLE t FIELDS TERMINATED BY ','", "LOCAL INFILE"),
    ("LOAD XML INFILE 'x.xml' INTO TABLE t", "LOAD XML"),
    ("KILL 42", "KILL ends a connection"),
    ("KILL QUERY 42", "KILL QUERY ends a statement"),
    ("FLUSH PRIVILEGES", "FLUSH PRIVILEGES"),
    ("FLUSH TABLES WITH READ LOCK", "FLUSH TABLES WITH READ LOCK blocks writes"),
    ("FLUSH LOGS", "FLUSH LOGS"),
    ("RESET MASTER", "RESET MASTER deletes binary logs"),
    ("RESET REPLICA", "RESET REPLICA"),
    ("PURGE BINARY LOGS TO 'bin.000010'", "PURGE BINARY LOGS"),
    ("SHUTDOWN", "SHUTDOWN stops the server"),
    ("RESTART", "RESTART restarts the server"),
    ("INSTALL PLUGIN x SONAME 'x.so'", "INSTALL PLUGIN loads server code"),
    ("INSTALL SONAME 'x'", "INSTALL SONAME"),
    ("UNINSTALL PLUGIN x", "UNINSTALL PLUGIN"),
    ("CHANGE MASTER TO MASTER_HOST = 'evil'", "CHANGE MASTER"),
    ("CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'evil'", "CHANGE REPLICATION SOURCE"),
    ("START SLAVE", "START SLAVE is replication, not a transaction"),
    ("START REPLICA", "START REPLICA"),
    ("STOP SLAVE", "STOP SLAVE"),
    ("STOP REPLICA", "STOP REPLICA"),
    ("BINLOG 'base64'", "BINLOG replays events"),
    ("CACHE INDEX t IN hot_cache", "CACHE INDEX"),
    ("LOAD INDEX INTO CACHE t", "LOAD INDEX INTO CACHE"),
    ("CHECKSUM TABLE t", "CHECKSUM TABLE"),
    ("HELP 'select'", "HELP is not a query"),
    ("DELIMITER //", "DELIMITER is a client command"),
    ("EXPLAIN ANALYZE SELECT * FROM t", "EXPLAIN ANALYZE runs the statement"),
    ("ANALYZE SELECT * FROM t", "MariaDB's ANALYZE runs the statement"),
    ("ANALYZE FORMAT=JSON SELECT * FROM t", "ANALYZE FORMAT=JSON runs the statement"),
    ("EXPLAIN UPDATE t SET a = 1", "EXPLAIN of a write is judged like the write"),
    ("EXPLAIN DELETE FROM t", "EXPLAIN of a DELETE"),
    ("EXPLAIN SELECT * FROM t FOR UPDATE", "EXPLAIN of a locking read"),
    ("SELEC 1", "a misspelt keyword is unknown"),
    ("FOO BAR", "unknown text"),
    ("SELECT FROM WHERE", "a query the parser cannot read"),
    ("VALUES (1), (2)", "MariaDB's VALUES list, which the parser cannot read: fail closed"),
    ("GET DIAGNOSTICS @n = NUMBER", "GET DIAGNOSTICS"),
    ("SIGNAL SQLSTATE '45000'", "SIGNAL"),
    ("BACKUP STAGE START", "BACKUP STAGE blocks writes"),
    ("LOCK INSTANCE FOR BACKUP", "LOCK INSTANCE is a server-wide lock"),
    ("SELECT 1; UPDATE t SET a = 1", "the riskier statement wins"),
    ("1 + 1", "text that does not start with a keyword"),
    ("SHOW1 TABLES", "a keyword followed by more letters is another word"),
    ("SELECT sys.format_bytes(1)", "sys schema helpers are stored functions too"),
    ("SELECT `sleep`(1)", "a quoted built-in name calls a stored function"),
    ("SELECT SLE/**/EP(1)", "a comment splits a name into two words"),
    ("(UPDATE t SET a = 1)", "a parenthesised write"),
    ("EXPLAIN SELECT my_fn()", "EXPLAIN of a query calling an unknown function"),
    ("SELECT 1 UNION SELECT a INTO @v FROM t", "INTO in a UNION part"),
    ("SELECT * FROM t LOCK/**/IN/**/SHARE/**/MODE", "comments inside LOCK IN SHARE MODE"),
    ("SET STATEMENT max_statement_time = 1 FOR UPDATE t SET a = 1", "SET STATEMENT FOR a write"),
    # A quoted name is an identifier: MariaDB finds native built-ins by it (GET_LOCK,
    # LOAD_FILE, …) and stored functions otherwise. An alias of the same name excuses nothing.
    (
        "SELECT `get_lock`('billing_job', 0) FROM t AS get_lock LIMIT 1",
        "quoted GET_LOCK is the built-in (verified: it took the lock); the alias is irrelevant",
    ),
    (
        "SELECT LENGTH(`load_file`('/etc/passwd')) FROM t AS load_file",
        "quoted LOAD_FILE reads the file (verified)",
    ),
    ("SELECT `sleep`(10) FROM t AS sleep", "quoted SLEEP with an alias of the same name"),
    ("SELECT `benchmark`(1e9, 1) FROM t AS benchmark", "quoted BENCHMARK with a same-name alias"),
    (
        "SELECT `master_pos_wait`('bin.000001', 4) FROM t AS master_pos_wait",
        "quoted MASTER_POS_WAIT with a same-name alias",
    ),
    ("SELECT evil() FROM t AS evil", "an alias named like an unknown function excuses nothing"),
    ("WITH evil AS (SELECT 1) SELECT evil() FROM evil", "nor does a CTE of that name"),
    (
        "WITH evil (a) AS (SELECT 1) SELECT evil (1) FROM evil",
        "only the CTE's own column list is excused, not a call elsewhere",
    ),
    ("SELECT `sum`(a) FROM t", "quoted SUM calls a stored function SUM (verified)"),
    ("SELECT `concat`(a, b) FROM t", "a quoted call is never read-only"),
    # A gap before "(" makes MariaDB look for a stored function (verified: a stored SUM ran).
    ("SELECT SUM (id) FROM t", "SUM with a blank calls a stored function SUM if one exists"),
    ("SELECT COUNT (x) FROM t", "COUNT with a blank"),
    ("SELECT MAX (x), MIN(x) FROM t", "MAX with a blank"),
    ("SELECT MIN\n(x) FROM t", "MIN with a newline"),
    ("SELECT NOW ()", "NOW with a blank"),
    ("SELECT TRIM (x) FROM t", "TRIM with a blank"),
    ("SELECT SUBSTRING (x, 1) FROM t", "SUBSTRING with a blank"),
    ("SELECT GROUP_CONCAT (x) FROM t", "GROUP_CONCAT with a blank"),
    ("SELECT SUM/**/(x) FROM t", "a comment between SUM and ("),
    ("SELECT CAST (a AS CHAR) FROM t", "CAST with a blank"),
    ("SELECT CONCAT (a, b) FROM t", "any name with a gap that is not a keyword (fail closed)"),
    # Non-reserved words before "(" call a stored function of that name (verified).
    ("SELECT PATH(1)", "PATH( outside JSON_TABLE"),
    ("SELECT COLUMNS(1)", "COLUMNS( not after a JSON_TABLE path"),
    ("SELECT NESTED(1)", "NESTED("),
    ("SELECT GEOMETRY(1)", "GEOMETRY("),
    ("SELECT VECTOR(1)", "VECTOR("),
    ("SELECT OF(1)", "OF("),
    ("SELECT MINUS(1)", "MINUS("),
    ("SELECT AGAINST(1)", "AGAINST( without MATCH (…) before it"),
    ("SELECT * FROM t WHERE a = 1 AND AGAINST ('x')", "AGAINST ( after something else"),
    ("SELECT 1, SQL_CACHE(1)", "SQL_CACHE( in an expression"),
    ("SELECT a FROM t WHERE ESCAPE (a)", "ESCAPE("),
    ("SELECT JSON_TABLE(1)", "JSON_TABLE without a COLUMNS clause is a stored function"),
    (
        "SELECT * FROM JSON_TABLE(doc, path COLUMNS (x INT PATH '$')) AS jt",
        "JSON_TABLE's path must be a literal; anything else is not the table function",
    ),
    ("SELECT x MEMBER OF ('[1, 2]') FROM t", "MySQL's MEMBER OF: on MariaDB OF( is a call"),
    ("SELECT a FROM t1 LEFT JOIN LATERAL (SELECT 1 AS b) d ON TRUE", "MySQL's LATERAL"),
    # Built-ins of MySQL only: on MariaDB 10.11 the name calls a stored function (verified).
    ("SELECT ANY_VALUE(a) FROM t GROUP BY b", "ANY_VALUE is MySQL's"),
    ("SELECT BIN_TO_UUID(a), UUID_TO_BIN(b) FROM t", "BIN_TO_UUID / UUID_TO_BIN are MySQL's"),
    ("SELECT a FROM t WHERE REGEXP_LIKE(a, 'x')", "REGEXP_LIKE is MySQL's"),
    ("SELECT TO_DATE('2024-01-01', 'YYYY-MM-DD')", "TO_DATE is not a 10.11 built-in"),
    ("SELECT TRUNC(1.5)", "TRUNC is not a 10.11 built-in"),
    ("SELECT ST_GEOHASH(1, 2, 3)", "ST_GEOHASH is MySQL's"),
    ("SELECT VEC_DISTANCE(a, b) FROM t", "VEC_* are MariaDB 11.7's"),
    ("SELECT UUID_V4()", "UUID_V4 is MariaDB 11.7's"),
    ("SELECT JSON_SCHEMA_VALID('{}', a) FROM t", "JSON_SCHEMA_VALID is MariaDB 11.1's"),
    ("SELECT POINT(1)", "POINT( takes exactly two arguments; other counts call a stored POINT"),
    ("SELECT POLYGON()", "POLYGON() with no argument calls a stored POLYGON"),
    # Writes reaching beyond the schema (their targets are tested below).
    ("INSERT INTO log (msg) VALUES (NEXTVAL(other.s))", "INSERT advancing another sequence"),
    ("UPDATE t JOIN (other.u) ON 1 SET other.u.b = 2", "a parenthesised table in UPDATE"),
    ("UPDATE (t JOIN other.u ON 1) SET u.b = 3", "a parenthesised join in UPDATE"),
    ("DELETE FROM a USING other.a AS a", "DELETE … USING an alias"),
    ("DELETE FROM log, other.u USING log JOIN other.u", "DELETE FROM a list USING"),
    ("SET @x = other.f()", "SET calling a stored function"),
    ("DO other.f(1)", "DO calling a stored function"),
]

DDLS = [
    # MariaDB commits the open transaction before these: in an approved call they would
    # commit the changes before them, which a later rollback could not undo.
    ("OPTIMIZE TABLE t", "OPTIMIZE TABLE rebuilds, and commits implicitly"),
    ("ANALYZE TABLE t", "ANALYZE TABLE rewrites statistics, and commits implicitly"),
    ("ANALYZE NO_WRITE_TO_BINLOG TABLE t", "ANALYZE NO_WRITE_TO_BINLOG TABLE commits too"),
    ("REPAIR TABLE t", "REPAIR TABLE commits implicitly"),
    ("CHECK TABLE t", "CHECK TABLE commits implicitly"),
    ("CREATE TABLE t (id INT PRIMARY KEY)", "CREATE TABLE"),
    ("CREATE TABLE other.t (id INT)", "CREATE TABLE in another schema"),
    ("CREATE TEMPORARY TABLE t (id INT)", "CREATE TEMPORARY TABLE is still DDL"),
    ("CREATE TABLE IF NOT EXISTS t LIKE u", "CREATE TABLE … LIKE"),
    ("CREATE TABLE t AS SELECT * FROM u", "CREATE TABLE … AS SELECT"),
    ("CREATE OR REPLACE TABLE t (a INT)", "CREATE OR REPLACE TABLE"),
    ("ALTER TABLE t ADD COLUMN b INT", "ALTER TABLE"),
    ("ALTER ONLINE TABLE t ADD b INT", "MariaDB's ALTER ONLINE TABLE"),
    ("ALTER TABLE t RENAME TO other.t", "ALTER TABLE … RENAME"),
    ("DROP TABLE t", "DROP TABLE"),
    ("DROP TABLE IF EXISTS t, u", "DROP TABLE IF EXISTS with a list"),
    ("DROP TEMPORARY TABLE t", "DROP TEMPORARY TABLE"),
    ("CREATE VIEW v AS SELECT 1", "CREATE VIEW"),
    ("CREATE OR REPLACE VIEW db.v AS SELECT 1", "CREATE OR REPLACE VIEW"),
    (
        "CREATE ALGORITHM=MERGE DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW v AS SELECT 1",
        "CREATE VIEW with modifiers",
    ),
    ("ALTER VIEW v AS SELECT 2", "ALTER VIEW"),
    ("DROP VIEW v", "DROP VIEW"),
    ("CREATE INDEX i ON t (a)", "CREATE INDEX"),
    ("CREATE UNIQUE INDEX i ON db.t (a)", "CREATE UNIQUE INDEX"),
    ("DROP INDEX i ON t", "DROP INDEX"),
    ("CREATE DATABASE x", "CREATE DATABASE"),
    ("CREATE SCHEMA IF NOT EXISTS x", "CREATE SCHEMA"),
    ("DROP DATABASE x", "DROP DATABASE"),
    ("DROP SCHEMA x", "DROP SCHEMA"),
    ("ALTER DATABASE x CHARACTER SET utf8mb4", "ALTER DATABASE"),
    ("CREATE USER 'u'@'%' IDENTIFIED BY 'p'", "CREATE USER"),
    ("ALTER USER u IDENTIFIED BY 'x'", "ALTER USER"),
    ("DROP USER u", "DROP USER"),
    ("RENAME USER a TO b", "RENAME USER"),
    ("CREATE ROLE r", "CREATE ROLE"),
    ("DROP ROLE r", "DROP ROLE"),
    ("CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1", "CREATE TRIGGER"),
    (
        "CREATE DEFINER=root@localhost TRIGGER tr AFTER UPDATE ON t FOR EACH ROW SET @x = 1",
        "CREATE DEFINER=… TRIGGER",
    ),
    ("DROP TRIGGER IF EXISTS tr", "DROP TRIGGER"),
    ("CREATE EVENT e ON SCHEDULE EVERY 1 DAY DO DELETE FROM t", "CREATE EVENT"),
    ("ALTER EVENT e DISABLE", "ALTER EVENT"),
    ("DROP EVENT e", "DROP EVENT"),
    ("CREATE PROCEDURE p() SELECT 1", "CREATE PROCEDURE"),
    ("CREATE FUNCTION f() RETURNS INT RETURN 1", "CREATE FUNCTION"),
    ("CREATE FUNCTION sys_exec RETURNS INT SONAME 'lib_mysqludf_sys.so'", "a loadable function"),
    ("ALTER PROCEDURE p COMMENT 'x'", "ALTER PROCEDURE"),
    ("DROP PROCEDURE p", "DROP PROCEDURE"),
    ("DROP FUNCTION db.f", "DROP FUNCTION"),
    ("CREATE SEQUENCE s", "CREATE SEQUENCE"),
    ("ALTER SEQUENCE s RESTART 1", "ALTER SEQUENCE"),
    ("DROP SEQUENCE s", "DROP SEQUENCE"),
    ("CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (HOST 'h')", "CREATE SERVER"),
    ("DROP SERVER s", "DROP SERVER"),
    ("CREATE TABLESPACE ts ADD DATAFILE 'ts.ibd'", "CREATE TABLESPACE"),
    ("RENAME TABLE a TO b, other.c TO d", "RENAME TABLE"),
    ("TRUNCATE TABLE t", "TRUNCATE TABLE"),
    ("TRUNCATE other.t", "TRUNCATE without TABLE"),
    ("GRANT SELECT ON db.* TO u", "GRANT"),
    ("GRANT ALL PRIVILEGES ON *.* TO 'u'@'%' WITH GRANT OPTION", "GRANT ALL"),
    ("GRANT r TO u", "granting a role"),
    ("REVOKE SELECT ON db.* FROM u", "REVOKE"),
    ("SET PASSWORD FOR u = 'x'", "SET PASSWORD changes an account"),
    ("SET DEFAULT ROLE r TO u", "SET DEFAULT ROLE changes an account"),
    ("PREPARE s FROM 'DROP TABLE t'", "PREPARE is judged by its statement"),
    ("EXECUTE IMMEDIATE 'DROP TABLE t'", "EXECUTE IMMEDIATE is judged by its statement"),
    ("PREPARE s FROM 'DR' 'OP TABLE t'", "adjacent literals are one statement"),
    ("/*!50000 DROP TABLE t */", "DDL inside an executable comment"),
    ("/*M!100100 DROP TABLE t */", "DDL inside a MariaDB executable comment"),
    ("/*!99999 -- */ DROP TABLE t", "a comment's content cannot hide what follows it"),
    ("SELECT 1 /*! ; DROP TABLE t */", "a statement hidden in an executable comment"),
    ("SELECT 1; DROP TABLE t", "the riskier statement wins"),
    ('PREPARE s FROM "DROP TABLE t"', "a double-quoted prepared statement"),
    ("SET STATEMENT max_statement_time = 1 FOR DROP TABLE t", "SET STATEMENT FOR DDL"),
    ("EXPLAIN ANALYZE DELETE FROM t; TRUNCATE t", "several statements, DDL last"),
    ("CREATE PROCEDURE p() BEGIN SELECT 1; END", "a procedure body split at its semicolon"),
    (
        "CREATE TRIGGER trg AFTER INSERT ON log FOR EACH ROW DELETE FROM other.a",
        "a trigger whose body writes another schema",
    ),
    ("CREATE EVENT e ON SCHEDULE EVERY 1 DAY DO DROP TABLE other.u", "an event dropping a table"),
    ("CREATE TABLE m (id INT) ENGINE=MERGE UNION=(other.u)", "a MERGE table over another schema"),
    (
        "CREATE TABLE f (id INT) ENGINE=FEDERATED CONNECTION='mysql://u@h:3306/db/t'",
        "a FEDERATED table",
    ),
    (
        "CREATE TABLE c (id INT) ENGINE=CONNECT TABLE_TYPE=CSV FILE_NAME='/etc/passwd'",
        "a CONNECT table over a server file",
    ),
    ("CREATE VIEW v AS SELECT * FROM other.u", "a view over another schema's table"),
]

TRANSACTIONS = [
    ("BEGIN", "BEGIN opens a transaction"),
    ("BEGIN WORK", "BEGIN WORK"),
    ("START TRANSACTION", "START TRANSACTION"),
    ("START TRANSACTION READ ONLY", "even a read-only transaction spans statements"),
    ("START TRANSACTION WITH CONSISTENT SNAPSHOT", "WITH CONSISTENT SNAPSHOT"),
    ("COMMIT", "COMMIT"),
    ("COMMIT WORK", "COMMIT WORK"),
    ("COMMIT AND CHAIN", "COMMIT AND CHAIN"),
    ("ROLLBACK", "ROLLBACK"),
    ("ROLLBACK WORK", "ROLLBACK WORK"),
    ("ROLLBACK TO SAVEPOINT a", "ROLLBACK TO SAVEPOINT"),
    ("ROLLBACK TO a", "ROLLBACK TO without SAVEPOINT"),
    ("SAVEPOINT a", "SAVEPOINT"),
    ("RELEASE SAVEPOINT a", "RELEASE SAVEPOINT"),
    ("XA START 'x'", "XA START"),
    ("XA END 'x'", "XA END"),
    ("XA PREPARE 'x'", "XA PREPARE"),
    ("XA COMMIT 'x'", "XA COMMIT"),
    ("XA ROLLBACK 'x'", "XA ROLLBACK"),
    ("SET autocommit = 0", "autocommit=0 opens implicit transactions"),
    ("SET autocommit = 1", "autocommit=1 commits the open transaction"),
    ("SET @@autocommit = 0", "SET @@autocommit"),
    ("SET SESSION autocommit = 0", "SET SESSION autocommit"),
    ("SET @@session.autocommit = OFF", "SET @@session.autocommit"),
    ("SET sql_mode = '', autocommit = 0", "autocommit among other variables"),
    ("SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED", "SET TRANSACTION"),
    ("SET SESSION TRANSACTION READ WRITE", "SET SESSION TRANSACTION"),
    ("SET GLOBAL TRANSACTION ISOLATION LEVEL SERIALIZABLE", "SET GLOBAL TRANSACTION"),
    ("SET transaction_read_only = 0", "switching off the read-only session"),
    ("SET @@session.tx_read_only = 0", "switching off the read-only session, old name"),
    ("SET tx_isolation = 'READ-UNCOMMITTED'", "changing the isolation level"),
    ("LOCK TABLES t READ", "LOCK TABLES holds locks for the session"),
    ("LOCK TABLE t WRITE, other.u AS x READ", "LOCK TABLE with several tables"),
    ("UNLOCK TABLES", "UNLOCK TABLES commits"),
    ("PREPARE s FROM @sql", "a statement from a variable cannot be checked"),
    ("EXECUTE IMMEDIATE @sql", "EXECUTE IMMEDIATE of a variable cannot be checked"),
    ("PREPARE s FROM 'COMMIT'", "a prepared COMMIT"),
    ("/*! COMMIT */", "COMMIT inside an executable comment"),
    ("SELECT 1; UPDATE t SET a = 1; COMMIT", "transaction control outranks the rest"),
    ("BEGIN NOT ATOMIC SELECT 1", "MariaDB's anonymous block"),
]

CASES = (
    [(sql, R, why) for sql, why in READS]
    + [(sql, W, why) for sql, why in WRITES]
    + [(sql, D, why) for sql, why in DDLS]
    + [(sql, T, why) for sql, why in TRANSACTIONS]
)


@pytest.mark.parametrize(("sql", "expected", "why"), CASES, ids=[why for *_, why in CASES])
def test_every_statement_gets_its_risk(sql: str, expected: Risk, why: str) -> None:
    classification = classify(sql)
    assert classification.risk is expected, (why, classification)


def test_the_table_holds_well_over_150_rows() -> None:
    assert len(CASES) > 300
    assert len({sql for sql, *_ in CASES}) == len(CASES), "each row tests different SQL"


# --- risk ordering and the overall risk -----------------------------------------------------


def test_risks_are_ordered_from_read_only_to_transaction() -> None:
    assert [risk.rank for risk in (R, W, D, T)] == [0, 1, 2, 3]
    assert sorted([T, R, D, W], key=lambda risk: risk.rank) == [R, W, D, T]


def test_risk_values_are_the_contract_strings() -> None:
    assert [risk.value for risk in Risk] == ["read_only", "write", "ddl", "transaction"]


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT 1; SELECT 2", R),
        ("SELECT 1; INSERT INTO t VALUES (1)", W),
        ("INSERT INTO t VALUES (1); DROP TABLE t; SELECT 1", D),
        ("DROP TABLE t; COMMIT; SELECT 1", T),
    ],
)
def test_the_overall_risk_is_the_highest_statement_risk(sql: str, expected: Risk) -> None:
    classification = classify(sql)
    assert classification.risk is expected
    assert classification.risk is max((s.risk for s in classification.statements), key=_rank)


def _rank(risk: Risk) -> int:
    return risk.rank


def test_is_read_only_is_true_only_for_read_only() -> None:
    assert classify("SELECT 1").is_read_only
    assert not classify("SELECT 1 FOR UPDATE").is_read_only


# --- reasons ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "expected"), [(sql, risk) for sql, risk, _ in CASES if risk is not R], ids=str
)
def test_every_statement_that_is_not_read_only_says_why(sql: str, expected: Risk) -> None:
    classification = classify(sql)
    assert classification.reasons
    for statement in classification.statements:
        assert statement.reasons
        assert all(reason.strip() for reason in statement.reasons)


@pytest.mark.parametrize(
    ("sql", "fragment"),
    [
        ("SELECT * FROM t FOR UPDATE", "FOR UPDATE takes row locks"),
        ("SELECT * FROM t LOCK IN SHARE MODE", "LOCK IN SHARE MODE takes shared row locks"),
        ("SELECT * INTO OUTFILE '/x' FROM t", "INTO OUTFILE writes a file"),
        ("SELECT SLEEP(1)", "SLEEP() holds the connection"),
        ("SELECT NEXT VALUE FOR s", "advances a sequence"),
        ("SELECT my_fn(1)", "my_fn(), which is not a known built-in"),
        ("SELECT /*!40001 SQL_NO_CACHE */ 1", "executable comment"),
        ("WITH x AS (SELECT 1) DELETE FROM t", "writable CTE"),
        ("SET autocommit = 0", "autocommit"),
        ("EXPLAIN ANALYZE SELECT 1", "runs the statement"),
        ("DROP TABLE t", "deletes tables"),
        ("GRANT SELECT ON *.* TO u", "privileges"),
        ("PREPARE s FROM @q", "cannot be checked"),
    ],
)
def test_reasons_say_what_the_statement_does(sql: str, fragment: str) -> None:
    assert any(fragment in reason for reason in classify(sql).reasons), classify(sql).reasons


def test_reasons_of_several_statements_name_the_statement() -> None:
    reasons = classify("SELECT 1; DROP TABLE t").reasons
    assert reasons == ("statement 2 (DROP TABLE): DROP TABLE deletes tables and all their rows",)


def test_read_only_statements_say_so_too() -> None:
    assert classify("SELECT 1").reasons == ("SELECT only reads data",)


# --- empty input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql", ["", "   ", "\n\t", ";", ";;", " ; ; ", "-- nothing", "/* x */", "#x"]
)
def test_no_statement_at_all_fails_closed_as_a_write(sql: str) -> None:
    classification = classify(sql)
    assert classification.statements == ()
    assert classification.risk is W
    assert classification.reasons == ("no SQL statement found",)
    assert not classification.is_read_only


# --- kinds ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("SELECT 1", "SELECT"),
        ("WITH x AS (SELECT 1) SELECT * FROM x", "SELECT"),
        ("(SELECT 1)", "SELECT"),
        ("WITH x AS (SELECT 1) UPDATE t SET a = 1", "UPDATE"),
        ("SHOW TABLES", "SHOW"),
        ("DESCRIBE t", "DESCRIBE"),
        ("EXPLAIN SELECT 1", "EXPLAIN"),
        ("EXPLAIN ANALYZE SELECT 1", "EXPLAIN ANALYZE"),
        ("INSERT INTO t VALUES (1)", "INSERT"),
        ("REPLACE INTO t VALUES (1)", "REPLACE"),
        ("CREATE TABLE t (a INT)", "CREATE TABLE"),
        ("CREATE TEMPORARY TABLE t (a INT)", "CREATE TABLE"),
        ("create or replace view v as select 1", "CREATE VIEW"),
        ("DROP SCHEMA x", "DROP DATABASE"),
        ("TRUNCATE t", "TRUNCATE TABLE"),
        ("START TRANSACTION", "START TRANSACTION"),
        ("ROLLBACK TO SAVEPOINT a", "ROLLBACK TO SAVEPOINT"),
        ("XA COMMIT 'x'", "XA COMMIT"),
        ("LOCK TABLES t READ", "LOCK TABLES"),
        ("SET TRANSACTION READ ONLY", "SET TRANSACTION"),
        ("OPTIMIZE TABLE t", "OPTIMIZE TABLE"),
        ("LOAD DATA INFILE 'x' INTO TABLE t", "LOAD DATA"),
        ("SELEC 1", "UNKNOWN"),
        ("SELECT FROM WHERE", "UNKNOWN"),
        ("DELIMITER //", "UNKNOWN"),
        ("SELECT 'abc", "UNKNOWN"),
    ],
)
def test_kind_names_the_statement(sql: str, kind: str) -> None:
    assert classify(sql).statements[0].kind == kind


# --- targets ----------------------------------------------------------------------------

SERVER = TableRef("*", "*")


@pytest.mark.parametrize(
    ("sql", "targets"),
    [
        ("UPDATE other.t SET a = 1", [TableRef("other", "t")]),
        ("INSERT INTO t (a) VALUES (1)", [TableRef(None, "t")]),
        ("INSERT INTO `my db`.`my``table` VALUES (1)", [TableRef("my db", "my`table")]),
        ("REPLACE INTO other.t VALUES (1)", [TableRef("other", "t")]),
        ("INSERT INTO t SELECT * FROM other.u", [TableRef(None, "t")]),
        ("DELETE FROM t WHERE id IN (SELECT id FROM o.u)", [TableRef(None, "t")]),
        ("DELETE x FROM other.t AS x JOIN u ON u.id = x.id", [TableRef("other", "t")]),
        (
            "DELETE a, b FROM a JOIN other.b ON a.id = b.id",
            [TableRef(None, "a"), TableRef("other", "b")],
        ),
        ("DELETE FROM a USING a JOIN b ON a.id = b.id", [TableRef(None, "a")]),
        ("UPDATE a JOIN other.b ON a.id = b.id SET a.x = b.x", [TableRef(None, "a")]),
        ("UPDATE a JOIN other.b AS o ON a.id = o.id SET o.x = 1", [TableRef("other", "b")]),
        (
            "UPDATE a JOIN other.b ON a.id = b.id SET x = 1",
            [TableRef(None, "a"), TableRef("other", "b")],
        ),
        ("UPDATE t SET a = (SELECT x FROM other.u)", [TableRef(None, "t")]),
        (
            "WITH c AS (SELECT 1 AS id) UPDATE t JOIN c ON t.id = c.id SET t.a = 1",
            [TableRef(None, "t")],
        ),
        ("CREATE TABLE other.t (a INT)", [TableRef("other", "t")]),
        ("CREATE TEMPORARY TABLE IF NOT EXISTS t (a INT)", [TableRef(None, "t")]),
        ("ALTER TABLE t RENAME TO other.t", [TableRef(None, "t"), TableRef("other", "t")]),
        ("ALTER TABLE t RENAME COLUMN a TO b", [TableRef(None, "t")]),
        (
            "ALTER TABLE t EXCHANGE PARTITION p WITH TABLE other.u",
            [TableRef(None, "t"), TableRef("other", "u")],
        ),
        ("DROP TABLE IF EXISTS t, other.u", [TableRef(None, "t"), TableRef("other", "u")]),
        (
            "RENAME TABLE a TO other.b, c TO d",
            [TableRef(None, "a"), TableRef("other", "b"), TableRef(None, "c"), TableRef(None, "d")],
        ),
        ("TRUNCATE TABLE other.t", [TableRef("other", "t")]),
        ("CREATE INDEX i ON other.t (a)", [TableRef("other", "t")]),
        ("DROP INDEX i ON t", [TableRef(None, "t")]),
        ("CREATE OR REPLACE VIEW other.v AS SELECT 1", [TableRef("other", "v")]),
        ("CREATE DEFINER=`a`@`b` VIEW v AS SELECT 1", [TableRef(None, "v")]),
        (
            "CREATE TRIGGER db.tr BEFORE INSERT ON other.t FOR EACH ROW SET @a = 1",
            [TableRef("db", "tr"), TableRef("other", "t")],
        ),
        ("DROP PROCEDURE IF EXISTS other.p", [TableRef("other", "p")]),
        ("CREATE DATABASE x", [TableRef("x", "")]),
        ("DROP DATABASE IF EXISTS `x`", [TableRef("x", "")]),
        ("DROP SCHEMA x", [TableRef("x", "")]),
        ("ALTER DATABASE DEFAULT CHARACTER SET utf8mb4", [TableRef(None, "")]),
        ("USE other", [TableRef("other", "")]),
        ("CREATE USER u IDENTIFIED BY 'p'", [SERVER]),
        ("GRANT ALL ON shop.* TO u", [SERVER]),
        ("REVOKE ALL ON shop.* FROM u", [SERVER]),
        ("SET PASSWORD FOR u = 'x'", [SERVER]),
        ("SET GLOBAL max_connections = 1", [SERVER]),
        ("SET @@GLOBAL.max_connections = 1", [SERVER]),
        ("KILL 1", [SERVER]),
        ("INSTALL PLUGIN p SONAME 'p.so'", [SERVER]),
        ("CREATE FUNCTION f RETURNS STRING SONAME 'f.so'", [TableRef(None, "f"), SERVER]),
        ("CALL other.p()", [TableRef("other", "p")]),
        ("LOAD DATA INFILE 'x' INTO TABLE other.t", [TableRef("other", "t"), SERVER]),
        ("OPTIMIZE TABLE t, other.u", [TableRef(None, "t"), TableRef("other", "u")]),
        ("LOCK TABLES t READ, other.u AS x WRITE", [TableRef(None, "t"), TableRef("other", "u")]),
        ("SELECT * FROM other.t FOR UPDATE", [TableRef("other", "t")]),
        ("SELECT NEXTVAL(other.s)", [TableRef("other", "s")]),
        ("SELECT NEXT VALUE FOR `other`.`s`", [TableRef("other", "s")]),
        ("EXPLAIN UPDATE other.t SET a = 1", [TableRef("other", "t")]),
        ("PREPARE s FROM 'DELETE FROM other.t'", [TableRef("other", "t")]),
        ("/*!50000 DROP TABLE other.t */", [TableRef("other", "t")]),
        ("SELECT * FROM t", []),
        ("SET @a = 1", []),
        ("COMMIT", []),
    ],
    ids=str,
)
def test_targets_name_what_the_statement_writes(sql: str, targets: list[TableRef]) -> None:
    found = [target for statement in classify(sql).statements for target in statement.targets]
    assert found == targets


OTHER = "other"


@pytest.mark.parametrize(
    ("sql", "targets", "why"),
    [
        # Multi-table UPDATE and DELETE: parenthesised table references are table references.
        (
            "UPDATE t JOIN (other.u) ON 1 SET other.u.b = 2",
            [TableRef(OTHER, "u")],
            "a parenthesised table resolves like any other (verified: it changed other.u)",
        ),
        (
            "UPDATE (t JOIN other.u ON 1) SET u.b = 3",
            [TableRef(None, "t"), TableRef(OTHER, "u")],
            "the parser cannot read it; every table in the references (verified write)",
        ),
        (
            "UPDATE t JOIN ((other.u)) ON 1 SET b = 1",
            [TableRef(None, "t"), TableRef(OTHER, "u")],
            "an unqualified SET column in a multi-table UPDATE: every table",
        ),
        (
            "UPDATE t JOIN (SELECT * FROM other.u) d ON 1 SET t.b = d.b",
            [TableRef(None, "t")],
            "a derived table is read only (the server refuses to update through it)",
        ),
        (
            "DELETE FROM a USING other.a AS a",
            [TableRef(OTHER, "a")],
            "the listed name is USING's alias (verified: it deleted from other.a)",
        ),
        (
            "DELETE FROM log, other.u USING log JOIN other.u",
            [TableRef(None, "log"), TableRef(OTHER, "u")],
            "DELETE FROM a list USING references (verified)",
        ),
        (
            "DELETE FROM a USING (a JOIN other.b ON 1)",
            [TableRef(None, "a")],
            "USING's references in parentheses",
        ),
        (
            "DELETE a FROM (t JOIN other.a AS a ON 1)",
            [TableRef(OTHER, "a")],
            "DELETE <list> FROM parenthesised references",
        ),
        (
            "DELETE x FROM t",
            [TableRef(None, "t"), TableRef(None, "x")],
            "a listed name that resolves to nothing: every table, and the name",
        ),
        (
            "UPDATE t STRAIGHT_JOIN other.u ON t.id = u.id SET u.b = 1",
            [TableRef(None, "t"), TableRef(OTHER, "u")],
            "unparsed STRAIGHT_JOIN: the token fallback, ON condition skipped",
        ),
        # Sequences and stored functions a write reaches.
        (
            "INSERT INTO log (msg) VALUES (NEXTVAL(other.s))",
            [TableRef(None, "log"), TableRef(OTHER, "s")],
            "a sequence advanced in another schema (verified)",
        ),
        (
            "INSERT INTO log (msg) VALUES (NEXT VALUE FOR other.s)",
            [TableRef(None, "log"), TableRef(OTHER, "s")],
            "NEXT VALUE FOR in an INSERT",
        ),
        (
            "UPDATE t SET a = other.f(a)",
            [TableRef(None, "t"), TableRef(OTHER, "f")],
            "a stored function of another schema runs with its definer's rights",
        ),
        ("SET @x = other.f()", [TableRef(OTHER, "f")], "SET calling another schema's function"),
        ("DO other.f(1)", [TableRef(OTHER, "f")], "DO calling another schema's function"),
        ("SELECT other.f(1)", [TableRef(OTHER, "f")], "a query calling another schema's function"),
        ("SELECT other.s.nextval", [TableRef(OTHER, "s")], "Oracle-mode nextval, qualified"),
        (
            "SELECT ßßßßßßß, NEXT VALUE FOR other.s",
            [TableRef(OTHER, "s")],
            "offsets stay right when upper case is longer (ß -> SS)",
        ),
        # The server's (or the bot host's) file system: the whole server.
        ("SELECT * FROM t INTO OUTFILE '/tmp/x'", [SERVER], "INTO OUTFILE writes a server file"),
        ("SELECT a FROM t INTO DUMPFILE '/tmp/x'", [SERVER], "INTO DUMPFILE"),
        ("SELECT a INTO @v FROM t", [], "INTO @variable is session state only"),
        ("SELECT LOAD_FILE('/etc/passwd')", [SERVER], "LOAD_FILE reads a server file"),
        (
            "LOAD DATA LOCAL INFILE 'x.csv' INTO TABLE t",
            [TableRef(None, "t"), SERVER],
            "LOCAL INFILE reads the bot host's files",
        ),
        ("INSERT INTO dumpfile VALUES (1)", [TableRef(None, "dumpfile")], "a table named dumpfile"),
        # Stored programs: their body runs later; what it writes is a target now.
        (
            "CREATE TRIGGER trg AFTER INSERT ON log FOR EACH ROW DELETE FROM other.a",
            [TableRef(None, "trg"), TableRef(None, "log"), TableRef(OTHER, "a")],
            "a trigger body deleting from another schema (verified)",
        ),
        (
            "CREATE TRIGGER trg BEFORE INSERT ON log FOR EACH ROW SET NEW.a = NEXTVAL(other.s)",
            [TableRef(None, "trg"), TableRef(None, "log"), TableRef(OTHER, "s")],
            "a trigger body advancing another schema's sequence",
        ),
        (
            "CREATE TRIGGER trg AFTER INSERT ON log FOR EACH ROW FOLLOWS t2 "
            "INSERT INTO other.audit VALUES (NEW.id)",
            [TableRef(None, "trg"), TableRef(None, "log"), TableRef(OTHER, "audit")],
            "FOLLOWS before the body",
        ),
        (
            "CREATE TRIGGER trg BEFORE INSERT ON log FOR EACH ROW SET NEW.a = 1",
            [TableRef(None, "trg"), TableRef(None, "log")],
            "NEW.a is the row, not a schema",
        ),
        (
            "CREATE TRIGGER trg AFTER INSERT ON log FOR EACH ROW BEGIN DELETE FROM a",
            [TableRef(None, "trg"), TableRef(None, "log"), SERVER],
            "a compound body is not checked statement by statement: server-wide",
        ),
        (
            "CREATE EVENT e ON SCHEDULE EVERY 1 DAY DO DROP TABLE other.u",
            [TableRef(None, "e"), TableRef(OTHER, "u")],
            "an event body (verified)",
        ),
        (
            "CREATE EVENT e ON SCHEDULE EVERY 1 DAY DO DROP DATABASE other",
            [TableRef(None, "e"), TableRef(OTHER, "")],
            "an event dropping a schema",
        ),
        (
            "CREATE EVENT e ON SCHEDULE EVERY 1 DAY DO SET GLOBAL max_connections = 1",
            [TableRef(None, "e"), SERVER],
            "an event changing a global setting",
        ),
        (
            "ALTER EVENT e DO DELETE FROM other.a",
            [TableRef(None, "e"), TableRef(OTHER, "a")],
            "ALTER EVENT … DO replaces the body",
        ),
        (
            "ALTER EVENT e RENAME TO other.e",
            [TableRef(None, "e"), TableRef(OTHER, "e")],
            "ALTER EVENT … RENAME TO moves it",
        ),
        ("ALTER EVENT e DISABLE", [TableRef(None, "e")], "ALTER EVENT without a body"),
        (
            "CREATE PROCEDURE p() DELETE FROM other.a",
            [TableRef(None, "p"), TableRef(OTHER, "a")],
            "a procedure body (verified)",
        ),
        (
            "CREATE PROCEDURE p(IN x INT) COMMENT 'c' MODIFIES SQL DATA UPDATE other.u SET b = x",
            [TableRef(None, "p"), TableRef(OTHER, "u")],
            "characteristics before the body",
        ),
        (
            "CREATE PROCEDURE p() BEGIN DELETE FROM other.a",
            [TableRef(None, "p"), SERVER],
            "a compound procedure body",
        ),
        (
            "CREATE FUNCTION f() RETURNS INT RETURN NEXTVAL(other.s)",
            [TableRef(None, "f"), TableRef(OTHER, "s")],
            "a function advancing another schema's sequence (verified)",
        ),
        (
            "CREATE FUNCTION f() RETURNS VARCHAR(10) CHARACTER SET utf8mb4 DETERMINISTIC "
            "RETURN other.g()",
            [TableRef(None, "f"), TableRef(OTHER, "g")],
            "CHARACTER SET in the return type is not the body",
        ),
        (
            "CREATE FUNCTION f() RETURNS INT BEGIN RETURN 1",
            [TableRef(None, "f"), SERVER],
            "a compound function body",
        ),
        # Tables that keep their rows elsewhere, and views.
        (
            "CREATE TABLE m (id INT) ENGINE=MERGE UNION=(other.u, v)",
            [TableRef(None, "m"), TableRef(OTHER, "u"), TableRef(None, "v")],
            "a MERGE table writes into its UNION tables (verified)",
        ),
        (
            "CREATE TABLE f (id INT) ENGINE=FEDERATED CONNECTION='mysql://u@h:3306/db/t'",
            [TableRef(None, "f"), SERVER],
            "FEDERATED: another server's table",
        ),
        (
            "CREATE TABLE c (id INT) ENGINE=CONNECT TABLE_TYPE=CSV FILE_NAME='/etc/passwd'",
            [TableRef(None, "c"), SERVER],
            "CONNECT: files or other servers",
        ),
        ("ALTER TABLE t ENGINE = SPIDER", [TableRef(None, "t"), SERVER], "ALTER TABLE … ENGINE"),
        (
            "CREATE TABLE t (id INT) DATA DIRECTORY = '/tmp'",
            [TableRef(None, "t"), SERVER],
            "DATA DIRECTORY: files outside the data directory",
        ),
        (
            "SET STATEMENT default_storage_engine = CONNECT FOR CREATE TABLE c (id INT)",
            [SERVER, TableRef(None, "c")],
            "the default engine makes a table without ENGINE= a CONNECT table",
        ),
        (
            "SET @@session.`default_storage_engine` = 'SPIDER'",
            [SERVER],
            "a quoted engine setting, a quoted engine",
        ),
        (
            "SET STATEMENT default_storage_engine = Aria FOR CREATE TABLE c (id INT)",
            [TableRef(None, "c")],
            "a local default engine",
        ),
        (
            "UPDATE other\u00a0.t SET a = 1",
            [TableRef(OTHER, "t"), SERVER],
            "U+00A0 is part of the schema's name on the server; the parser skips it as a space",
        ),
        (
            "CREATE TABLE t (engine VARCHAR(10)) ENGINE=InnoDB",
            [TableRef(None, "t")],
            "a column named engine and a local engine",
        ),
        ("ALTER TABLE t ADD COLUMN engine INT", [TableRef(None, "t")], "a column named engine"),
        (
            "CREATE TABLE t AS SELECT engine FROM information_schema.engines",
            [TableRef(None, "t")],
            "engine in the query of CREATE TABLE … AS SELECT",
        ),
        (
            "CREATE TABLE t (a INT DEFAULT (NEXTVAL(other.s)))",
            [TableRef(None, "t"), TableRef(OTHER, "s")],
            "a default that advances another schema's sequence",
        ),
        (
            "CREATE TABLE t (a INT, FOREIGN KEY (a) REFERENCES other.u (id) ON DELETE CASCADE)",
            [TableRef(None, "t"), TableRef(OTHER, "u")],
            "a foreign key ties another schema's table (its deletes cascade here)",
        ),
        (
            "CREATE VIEW v AS SELECT * FROM other.u",
            [TableRef(None, "v"), TableRef(OTHER, "u")],
            "UPDATE v writes other.u (verified)",
        ),
        (
            "CREATE VIEW v (a) AS SELECT x FROM u JOIN other.w ON 1 WITH CHECK OPTION",
            [TableRef(None, "v"), TableRef(None, "u"), TableRef(OTHER, "w")],
            "a view with a column list and CHECK OPTION",
        ),
    ],
    ids=str,
)
def test_writes_beyond_the_schema_carry_their_targets(
    sql: str, targets: list[TableRef], why: str
) -> None:
    found = [target for statement in classify(sql).statements for target in statement.targets]
    assert found == targets, why


# --- statement splitting and spans -----------------------------------------------------


def _texts(sql: str) -> list[str]:
    return [statement.text for statement in classify(sql).statements]


@pytest.mark.parametrize(
    ("sql", "texts"),
    [
        ("SELECT 1; SELECT 2", ["SELECT 1", "SELECT 2"]),
        ("SELECT 1;;SELECT 2;", ["SELECT 1", "SELECT 2"]),
        ("  SELECT 1  ;\n\n  SELECT 2\n", ["SELECT 1", "SELECT 2"]),
        ("SELECT 'a;b'; SELECT 2", ["SELECT 'a;b'", "SELECT 2"]),
        ('SELECT "a;b"; SELECT 2', ['SELECT "a;b"', "SELECT 2"]),
        ("SELECT 'it''s;'; SELECT 2", ["SELECT 'it''s;'", "SELECT 2"]),
        ("SELECT 'a\\';b'; SELECT 2", ["SELECT 'a\\';b'", "SELECT 2"]),
        ("SELECT 'a\\\\'; SELECT 2", ["SELECT 'a\\\\'", "SELECT 2"]),
        ('SELECT "say ""hi;"""; SELECT 2', ['SELECT "say ""hi;"""', "SELECT 2"]),
        ("SELECT `a;b` FROM t; SELECT 2", ["SELECT `a;b` FROM t", "SELECT 2"]),
        ("SELECT `a``;b` FROM t; SELECT 2", ["SELECT `a``;b` FROM t", "SELECT 2"]),
        ("SELECT 1 -- a;b\n; SELECT 2", ["SELECT 1 -- a;b", "SELECT 2"]),
        ("SELECT 1 # a;b\n; SELECT 2", ["SELECT 1 # a;b", "SELECT 2"]),
        ("SELECT 1 /* a;b */; SELECT 2", ["SELECT 1 /* a;b */", "SELECT 2"]),
        ("SELECT 1--1; SELECT 2", ["SELECT 1--1", "SELECT 2"]),
        ("SELECT 1; -- trailing\n", ["SELECT 1"]),
        ("SELECT 1; /* only a comment */ ;", ["SELECT 1"]),
        ("/*!40101 SET NAMES utf8 */; SELECT 1", ["/*!40101 SET NAMES utf8 */", "SELECT 1"]),
        ("SELECT 'unterminated; DROP TABLE t", ["SELECT 'unterminated; DROP TABLE t"]),
        ("SELECT 1 /* open; DROP TABLE t", ["SELECT 1 /* open; DROP TABLE t"]),
        ("DELIMITER //\nSELECT 1//", ["DELIMITER //\nSELECT 1//"]),
    ],
    ids=str,
)
def test_statements_split_only_at_semicolons_that_are_code(sql: str, texts: list[str]) -> None:
    assert _texts(sql) == texts


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "  SELECT 1 ;  SELECT 'x;y' ;\n-- c\nDROP TABLE t ;",
        "/* a */ SELECT 1; # b\nUPDATE t SET a = ';';;;INSERT INTO t VALUES (`x;`)",
        "SELECT 1 -- trailing   \n",
        "SELECT 'é; ü' ; SELECT '日本;語'",
        "\n\n\tBEGIN;COMMIT\n",
    ],
)
def test_every_statement_span_points_at_its_exact_text(sql: str) -> None:
    classification = classify(sql)
    assert classification.statements
    for statement in classification.statements:
        assert sql[statement.start : statement.end] == statement.text
        assert statement.text == statement.text.strip(" \t\n\r\f\v")


def test_statement_offsets_increase_through_the_text() -> None:
    statements = classify("SELECT 1; SELECT 2; SELECT 3").statements
    assert [(s.start, s.end) for s in statements] == [(0, 8), (10, 18), (20, 28)]


def test_the_classification_keeps_the_original_text() -> None:
    sql = "  SELECT 1;  "
    assert classify(sql).sql == sql


def test_statements_are_the_contract_dataclasses() -> None:
    classification = classify("SELECT 1")
    assert isinstance(classification, Classification)
    assert isinstance(classification.statements[0], Statement)


def test_an_unsupported_dialect_is_refused_loudly() -> None:
    with pytest.raises(ValueError, match="dialect"):
        classify("SELECT 1", dialect="postgres")


def test_mariadb_is_accepted_as_a_dialect_name() -> None:
    assert classify("SELECT 1", dialect="mariadb").is_read_only


def _seconds(sql: str) -> float:
    """Best of five, with the garbage collector paused: these tests are about how the work
    grows, and a collection pass scales with everything else the test run keeps alive."""
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            started = time.perf_counter()
            classify(sql)
            best = min(best, time.perf_counter() - started)
    finally:
        gc.enable()
    return best


@pytest.mark.parametrize(
    "unit",
    [
        "UPDATE t SET a = 1 WHERE id = 2;\n",  # many statements, every one a write
        "SELECT f{n}(x);\n",  # many statements with distinct reasons
    ],
)
def test_classifying_many_statements_takes_linear_time(unit: str) -> None:
    """Classification time grows linearly with the number of statements (issue: 50,000
    statements took 26 s, the overall reasons being deduplicated against a list)."""
    small = "".join(unit.format(n=n) for n in range(1_000))
    large = "".join(unit.format(n=n) for n in range(4_000))
    assert len(classify(large).statements) == 4_000
    assert _seconds(large) < 10 * _seconds(small)  # 4x the text; quadratic would be ~16x


def test_one_huge_statement_takes_linear_time() -> None:
    """The classifier's own scans are linear in one statement's length (measured on DO,
    which is not parsed: sqlglot's parse of a single huge query grows faster than linear)."""

    def statement(count: int) -> str:
        return "DO " + ", ".join(f"o{n}.f{n}(x), g{n}(x)" for n in range(count))

    classification = classify(statement(4_000))
    assert len(classification.statements[0].targets) == 4_000  # every o<n>.f<n>
    assert _seconds(statement(4_000)) < 10 * _seconds(statement(1_000))  # quadratic: ~16x


def test_absurd_nesting_fails_closed_instead_of_crashing() -> None:
    sql = "SELECT " + "(" * 5000 + "1" + ")" * 5000
    assert classify(sql).risk is not R


# --- the function catalogue -------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SIDE_EFFECT_FUNCTIONS))
def test_every_side_effect_function_makes_a_query_a_write(name: str) -> None:
    classification = classify(f"SELECT {name.lower()}('x') FROM t")
    assert classification.risk is W
    assert SIDE_EFFECT_FUNCTIONS[name] in classification.reasons


def test_no_function_is_both_safe_and_a_side_effect() -> None:
    assert not SAFE_FUNCTIONS & SIDE_EFFECT_FUNCTIONS.keys()
    assert all(name == name.upper() for name in SAFE_FUNCTIONS | SIDE_EFFECT_FUNCTIONS.keys())


def test_the_catalogue_lists_are_consistent() -> None:
    every = SAFE_FUNCTIONS | PAREN_KEYWORDS | NEVER_STORED | CONTEXT_KEYWORDS
    assert all(name == name.upper() for name in every)
    assert NEVER_STORED <= SAFE_FUNCTIONS | PAREN_KEYWORDS
    assert not CONTEXT_KEYWORDS & (SAFE_FUNCTIONS | PAREN_KEYWORDS | NEVER_STORED)
    assert not SIDE_EFFECT_FUNCTIONS.keys() & (PAREN_KEYWORDS | NEVER_STORED)


@pytest.mark.parametrize(
    "name",
    # Built in on MySQL or newer MariaDB only, or only with their own argument count: on
    # MariaDB 10.11 these names call a stored function (tests/sql/test_function_catalogue.py).
    [
        "ANY_VALUE",
        "BIN_TO_UUID",
        "UUID_TO_BIN",
        "REGEXP_LIKE",
        "TO_DATE",
        "TRUNC",
        "ST_GEOHASH",
        "VEC_DISTANCE",
        "UUID_V4",
        "UUID_V7",
        "JSON_SCHEMA_VALID",
        "GROUPING",
        "JSON_TABLE",
        "POINT",
        "POLYGON",
        "LINESTRING",
        "GEOMETRYCOLLECTION",
        "FORMAT_BYTES",
        "PATH",
        "COLUMNS",
        "NESTED",
        "GEOMETRY",
        "VECTOR",
        "OF",
        "MINUS",
        "AGAINST",
        "LATERAL",
        "SQL_CACHE",
        "SQL_NO_CACHE",
        "SQL_BUFFER_RESULT",
        "ESCAPE",
    ],
)
def test_names_that_are_no_builtins_on_mariadb_are_not_allowed(name: str) -> None:
    assert name not in SAFE_FUNCTIONS | PAREN_KEYWORDS
    assert classify(f"SELECT 1, {name}(1)").risk is W


@pytest.mark.parametrize("name", sorted(SAFE_FUNCTIONS - NEVER_STORED))
def test_a_gap_before_the_parenthesis_is_never_read_only(name: str) -> None:
    for gap in (" ", "\n", "/**/", " -- c\n"):
        assert classify(f"SELECT {name.lower()}{gap}(1) FROM t").risk is not R, gap


@pytest.mark.parametrize("name", sorted(SAFE_FUNCTIONS))
def test_a_quoted_function_name_is_never_read_only(name: str) -> None:
    assert classify(f"SELECT `{name.lower()}`(1) FROM t").risk is not R


@pytest.mark.parametrize(
    ("sql", "fragment"),
    [
        ("SELECT SUM (a) FROM t", "space or comment before the parenthesis"),
        ("SELECT `sum`(a) FROM t", "quoted name is looked up as a stored function"),
        ("SELECT `get_lock`('x', 0) FROM t AS get_lock", "GET_LOCK() takes a named lock"),
        ("SELECT evil() FROM t AS evil", "evil(), which is not a known built-in"),
    ],
)
def test_call_reasons_say_what_the_server_would_call(sql: str, fragment: str) -> None:
    assert any(fragment in reason for reason in classify(sql).reasons), classify(sql).reasons


@pytest.mark.parametrize(
    ("sql", "fragment"),
    [
        (
            "CREATE TRIGGER trg AFTER INSERT ON log FOR EACH ROW DELETE FROM other.a",
            "its body runs later, without approval: DELETE removes rows",
        ),
        ("CREATE PROCEDURE p() BEGIN DELETE FROM a", "compound statement"),
        ("CREATE TABLE m (a INT) ENGINE=MERGE UNION=(o.u)", "tables of its UNION list"),
        ("CREATE TABLE f (a INT) ENGINE=FEDERATED", "ENGINE=FEDERATED keeps the table's data"),
        ("CREATE VIEW v AS SELECT * FROM o.u", "writes through to the tables it reads"),
        ("LOAD DATA INFILE 'x' INTO TABLE t", "reads a file from the database server"),
    ],
)
def test_ddl_reasons_say_what_reaches_beyond_the_object(sql: str, fragment: str) -> None:
    assert any(fragment in reason for reason in classify(sql).reasons), classify(sql).reasons


# --- purity and threads -----------------------------------------------------------------


def test_classifying_from_many_threads_gives_the_same_answers() -> None:
    sqls = [sql for sql, *_ in CASES]
    expected = [classify(sql) for sql in sqls]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(3):
            assert list(pool.map(classify, sqls)) == expected
