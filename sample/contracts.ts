/** The messages the three sample services exchange. */
export interface OrderPlaced {
  orderId: string;
  item: string;
  quantity: number;
  total: number;
}

export interface QuoteRequest {
  item: string;
  quantity: number;
}

export interface Quote {
  item: string;
  quantity: number;
  unitPrice: number;
  total: number;
}

/** Stream names (patterns). */
export const ORDERS = 'orders';
export const QUOTES = 'quotes.price';
export const ORDERS_CLIENT = Symbol('ORDERS_CLIENT');

/** A long job: billing renders a month's report page by page, reporting its progress. */
export interface ReportRequest {
  month: string;
  pages: number;
}

export interface ReportProgress {
  page: number;
  of: number;
}

export interface ReportDone {
  file: string;
  pages: number;
}

export const REPORTS = 'reports.monthly';
