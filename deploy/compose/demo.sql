-- The demo shop of compose.yaml, and the bot's account on it: the privileges approved changes
-- need and nothing more (`dbagent check` lists them). Run once, when the volume is new.
CREATE DATABASE IF NOT EXISTS `shop`;

CREATE TABLE `shop`.`customers` (
    id INT PRIMARY KEY,
    name VARCHAR(100) NOT NULL,
    country CHAR(2) NOT NULL
) COMMENT = 'people who buy';

CREATE TABLE `shop`.`orders` (
    id INT PRIMARY KEY,
    customer_id INT NOT NULL,
    status VARCHAR(20) NOT NULL,
    total DECIMAL(10, 2) NOT NULL,
    created_at DATETIME NOT NULL,
    KEY idx_orders_customer (customer_id),
    CONSTRAINT fk_orders_customer FOREIGN KEY (customer_id) REFERENCES `shop`.`customers` (id)
) COMMENT = 'one row per order';

INSERT INTO `shop`.`customers` VALUES
    (1, 'Ada', 'GB'), (2, 'Linus', 'FI'), (3, 'Grace', 'US'), (4, 'Margaret', 'US');

INSERT INTO `shop`.`orders` VALUES
    (10, 1, 'paid', 20.00, '2026-01-05 10:00:00'),
    (11, 1, 'pending', 5.50, '2026-01-06 11:30:00'),
    (12, 2, 'pending', 12.00, '2026-01-07 09:15:00'),
    (13, 3, 'shipped', 99.99, '2026-01-08 16:45:00'),
    (14, 4, 'paid', 42.00, '2026-01-09 08:05:00');

CREATE OR REPLACE VIEW `shop`.`open_orders` AS
    SELECT id, customer_id, total FROM `shop`.`orders` WHERE status = 'pending';

CREATE USER IF NOT EXISTS 'dbagent'@'%' IDENTIFIED BY 'dbagent-demo';
GRANT SELECT, SHOW VIEW, INSERT, UPDATE, DELETE, TRIGGER, EXECUTE ON `shop`.* TO 'dbagent'@'%';
-- A table privilege held globally lets information_schema list every foreign key on the shop
-- (the guard refuses changes whose cascades it cannot see); REFERENCES writes nothing.
GRANT REFERENCES ON *.* TO 'dbagent'@'%';
