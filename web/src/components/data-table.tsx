import { useId, useState, type ReactNode, type TdHTMLAttributes } from "react";
import { Loading, Pager } from "../ui";

/** One column: its header, what a row shows in it, and (to make it sortable) the value it sorts by. */
export interface Column<T> {
  header: ReactNode;
  cell: (row: T) => ReactNode;
  sortBy?: (row: T) => string | number | null | undefined;
  /** Extra attributes of the row's cell (a class, a title). */
  cellProps?: (row: T) => TdHTMLAttributes<HTMLTableCellElement>;
  /** The cell names its row: a <th scope="row">. */
  rowHeader?: boolean;
}

type Direction = "ascending" | "descending";

export interface DataTableProps<T> {
  /** Names the table: a <caption>, visually hidden unless `captionShown`. */
  caption: ReactNode;
  captionShown?: boolean;
  /** `undefined` while loading. */
  rows: readonly T[] | undefined;
  rowKey: (row: T, index: number) => string | number;
  /** An accessible name for each row, where its cells alone do not say enough. */
  rowLabel?: (row: T) => string;
  /** `false` leaves a column out (one shown only sometimes). */
  columns: (Column<T> | false)[];
  /** Shown instead of the table when there are no rows; without it an empty table shows. */
  empty?: ReactNode;
  /** Shown while `rows` is undefined; the Loading status unless told otherwise. */
  loading?: ReactNode;
  /** Pages the rows here, this many a page (lists the screen holds whole). */
  pageSize?: number;
  /** Paging done by the server (a cursor): what Previous and Next do. */
  serverPages?: { onPrevious?: () => void; onNext?: () => void };
  /** Names the pager's navigation; "<caption> pages" unless given (or the caption is not text). */
  pagerLabel?: string;
}

/**
 * Every list screen's table: a real <table> with a caption, column headers that sort when a
 * column says how (a button in the header, its state in aria-sort), paging over the rows or
 * through the server's cursor, and the screen's loading and empty states.
 */
export function DataTable<T>({ caption, captionShown = false, rows, rowKey, rowLabel, columns, empty, loading = <Loading />, pageSize, serverPages, pagerLabel = typeof caption === "string" ? `${caption} pages` : "Pages" }: DataTableProps<T>) {
  const shown = columns.filter((column): column is Column<T> => column !== false);
  const [sort, setSort] = useState<{ column: number; direction: Direction }>();
  const [page, setPage] = useState(0);
  const captionId = useId();

  if (!rows) return <>{loading}</>;
  if (rows.length === 0 && empty !== undefined) return <>{empty}</>;

  const sorted = sort ? sortRows(rows, shown[sort.column]?.sortBy, sort.direction) : rows;
  const pages = pageSize ? Math.max(1, Math.ceil(sorted.length / pageSize)) : 1;
  const current = Math.min(page, pages - 1);
  const visible = pageSize ? sorted.slice(current * pageSize, (current + 1) * pageSize) : sorted;
  const sortOn = (column: number) => {
    setSort(sort?.column === column && sort.direction === "ascending" ? { column, direction: "descending" } : { column, direction: "ascending" });
    setPage(0);
  };

  return (
    <>
      {/* A table wider than the window scrolls in this box, not the page; the box takes focus so keyboard users can scroll it too. */}
      <div className="table-scroll" role="region" aria-labelledby={captionId} tabIndex={0}>
        <table>
          <caption id={captionId} className={captionShown ? undefined : "visually-hidden"}>{caption}</caption>
          <thead>
            <tr>
              {shown.map((column, index) =>
                column.sortBy ? (
                  <th key={index} scope="col" aria-sort={sort?.column === index ? sort.direction : "none"}>
                    <button type="button" className="sort" onClick={() => sortOn(index)}>
                      {column.header}
                    </button>
                  </th>
                ) : (
                  <th key={index} scope="col">
                    {column.header}
                  </th>
                ),
              )}
            </tr>
          </thead>
          <tbody>
            {visible.map((row, index) => (
              <tr key={rowKey(row, index)} aria-label={rowLabel?.(row)}>
                {shown.map((column, c) =>
                  column.rowHeader ? (
                    <th key={c} scope="row" {...column.cellProps?.(row)}>
                      {column.cell(row)}
                    </th>
                  ) : (
                    <td key={c} {...column.cellProps?.(row)}>
                      {column.cell(row)}
                    </td>
                  ),
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {pageSize ? (
        <Pager label={pagerLabel} onPrevious={current > 0 ? () => setPage(current - 1) : undefined} onNext={current < pages - 1 ? () => setPage(current + 1) : undefined} />
      ) : (
        serverPages && <Pager label={pagerLabel} {...serverPages} />
      )}
    </>
  );
}

const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

/** A stable sort; rows without a value go last either way. */
function sortRows<T>(rows: readonly T[], by: Column<T>["sortBy"], direction: Direction): readonly T[] {
  if (!by) return rows;
  const sign = direction === "ascending" ? 1 : -1;
  return [...rows].sort((a, b) => {
    const x = by(a);
    const y = by(b);
    if (x == null || y == null) return x == null ? (y == null ? 0 : 1) : -1;
    return sign * (typeof x === "number" && typeof y === "number" ? x - y : collator.compare(String(x), String(y)));
  });
}

/** Rows a page for lists a screen holds whole (the lists the server pages keep the server's size). */
export const PAGE_SIZE = 50;
