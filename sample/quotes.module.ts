import { Controller, Module } from '@nestjs/common';
import { MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import { QUOTES, type Quote, type QuoteRequest } from './contracts.js';

const PRICE_LIST: Record<string, number> = { kettle: 25, teapot: 18, mug: 6 };

/** The price-quote service: answers `quotes.price` requests. */
@Controller()
export class QuotesController {
  @MessagePattern(QUOTES)
  quote(@Payload() request: QuoteRequest): Quote {
    const unitPrice = PRICE_LIST[request.item];
    if (unitPrice === undefined) throw new RpcException({ code: 'UNKNOWN_ITEM', item: request.item });
    return { item: request.item, quantity: request.quantity, unitPrice, total: unitPrice * request.quantity };
  }
}

@Module({ controllers: [QuotesController] })
export class QuotesModule {}
