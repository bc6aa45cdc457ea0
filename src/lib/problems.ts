/** What is wrong with one named field of an input; rendered by the HTTP layer as `errors[]`. */
export interface FieldProblem {
  field: string;
  message: string;
}
